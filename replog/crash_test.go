package replog

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const crashDirEnv = "TANDEM_REPLOG_CRASH_DIR"

// TestCrashChild is the child process of TestCrashStrict; on its own it
// skips. Four committers append in strict mode (GSN assignment under a
// sequencer lock, as a node does) and print "ack <gsn>" after WaitDurable
// returns, until the parent kills the process.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("child process of TestCrashStrict")
	}
	l, err := Open(dir, Options{Mode: Strict, SegmentSize: 16 << 10, Logger: quiet})
	if err != nil {
		fmt.Printf("error open: %v\n", err)
		os.Exit(2)
	}
	var seq, out sync.Mutex
	deadline := time.Now().Add(20 * time.Second) // never outlive a failed parent for long
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				seq.Lock()
				gsn := l.LastGSN() + 1
				_, err := l.Append(Record{GSN: gsn, Epoch: 1, Data: payload(gsn)})
				seq.Unlock()
				if err == nil {
					err = l.WaitDurable(context.Background(), gsn)
				}
				if err != nil {
					fmt.Printf("error append %d: %v\n", gsn, err)
					os.Exit(2)
				}
				out.Lock()
				fmt.Printf("ack %d\n", gsn)
				out.Unlock()
			}
		}()
	}
	wg.Wait()
	os.Exit(3)
}

// TestCrashStrict runs a real process that commits in strict mode, kills
// it with SIGKILL at a random point, reopens the log and checks that every
// acknowledged GSN is there, gap-free and intact; several rounds on the same
// directory, each child continuing where recovery left off.
//
// SIGKILL loses the process, not the page cache, so this proves recovery
// and the acknowledgement protocol, not the fdatasync itself (that needs
// power-loss emulation, e.g. dm-flakey, outside a unit test).
func TestCrashStrict(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	dir := t.TempDir()
	var maxAcked uint64
	for round := range 4 {
		ctx := ctxTimeout(t, 30*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAt := 20 + rng.IntN(400)
		delay := time.Duration(rng.IntN(300)) * time.Microsecond
		var acked []uint64
		killed := false
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "ack "):
				gsn, err := strconv.ParseUint(strings.TrimPrefix(line, "ack "), 10, 64)
				if err != nil {
					t.Fatalf("child printed %q", line)
				}
				acked = append(acked, gsn)
				if !killed && len(acked) >= killAt {
					time.Sleep(delay)
					if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
					killed = true
				}
			case strings.HasPrefix(line, "error"):
				t.Fatalf("child: %s\n%s", line, stderr.String())
			}
		}
		err = cmd.Wait() // the pipe is drained: every ack the child printed was read
		if !killed {
			t.Fatalf("round %d: child exited (%v) before the kill:\n%s", round, err, stderr.String())
		}

		l, err := Open(dir, Options{Logger: quiet})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		last := l.LastGSN()
		for _, gsn := range acked {
			if gsn > last {
				t.Fatalf("round %d: GSN %d was acknowledged durable but the log ends at %d", round, gsn, last)
			}
			maxAcked = max(maxAcked, gsn)
		}
		if last < maxAcked {
			t.Fatalf("round %d: log ends at %d, earlier rounds acknowledged %d", round, last, maxAcked)
		}
		checkRecords(t, readAll(t, l, 1), 1, last)
		t.Logf("round %d: killed after %d acks (+%v), highest ack %d, recovered to %d, dropped %d bytes",
			round, len(acked), delay, maxAcked, last, l.Recovered().DroppedBytes)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
