// Command sockmap is a measurement, not part of tandem: a TCP proxy whose
// bytes never reach user space. Each accepted client and its upstream
// connection join a BPF sockhash, each socket stored under its peer's socket
// cookie; an SK_SKB verdict program looks up the receiving socket's own
// cookie and redirects the skb to the egress of the socket stored there.
// With -mode copy it is a plain goroutine-per-direction copying proxy
// instead. docs/benchmarks.md (proxy hop) has the figures; README.md here
// has the commands.
package main

import (
	"flag"
	"io"
	"log"
	"net"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:6543", "address to accept clients on")
	up := flag.String("up", "127.0.0.1:5432", "upstream server (host:port, or a Unix socket path)")
	mode := flag.String("mode", "bpf", "bpf (kernel redirect) or copy (user-space copy)")
	flag.Parse()

	var splice func(c, s net.Conn)
	switch *mode {
	case "bpf":
		splice = newSplicer()
	case "copy":
		splice = copyBoth
	default:
		log.Fatalf("-mode %q: want bpf or copy", *mode)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on %s, upstream %s, mode %s", *listen, *up, *mode)
	network := "tcp"
	if strings.HasPrefix(*up, "/") {
		network = "unix"
	}
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			s, err := net.Dial(network, *up)
			if err != nil {
				log.Print(err)
				c.Close()
				return
			}
			splice(c, s)
		}()
	}
}

func copyBoth(c, s net.Conn) {
	go func() { _, _ = io.Copy(s, c); s.Close() }()
	_, _ = io.Copy(c, s)
	c.Close()
}

// newSplicer loads the maps and the verdict program and returns a function
// that splices one client/upstream pair until the client hangs up.
func newSplicer() func(c, s net.Conn) {
	sh, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.SockHash, KeySize: 8, ValueSize: 8, MaxEntries: 4096})
	if err != nil {
		log.Fatal("sockhash: ", err)
	}
	// ready gates the redirect: until both sockets of a pair are in, data
	// passes to user space instead of being dropped.
	ready, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: 1, MaxEntries: 4096})
	if err != nil {
		log.Fatal("hash: ", err)
	}
	const skPass = 1
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SkSKB, License: "GPL", Instructions: asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetSocketCookie.Call(),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, ready.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMapPtr(asm.R2, sh.FD()),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, 0), // egress of the peer
		asm.FnSkRedirectHash.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, skPass).WithSymbol("pass"),
		asm.Return(),
	}})
	if err != nil {
		log.Fatal("verdict program: ", err)
	}
	if err := link.RawAttachProgram(link.RawAttachProgramOptions{Target: sh.FD(), Program: prog, Attach: ebpf.AttachSkSKBVerdict}); err != nil {
		log.Fatal("attach: ", err)
	}
	return func(c, s net.Conn) {
		cf, sf := fdOf(c), fdOf(s)
		cc, sc := cookie(cf), cookie(sf)
		if err := sh.Update(sc, uint64(cf), ebpf.UpdateAny); err != nil {
			log.Print("sockhash client: ", err)
		}
		if err := sh.Update(cc, uint64(sf), ebpf.UpdateAny); err != nil {
			log.Print("sockhash upstream: ", err)
		}
		one := uint8(1)
		_ = ready.Update(cc, one, ebpf.UpdateAny)
		_ = ready.Update(sc, one, ebpf.UpdateAny)
		// The client's hang-up (or anything passed to user space) ends it.
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		_ = ready.Delete(cc)
		_ = ready.Delete(sc)
		_ = sh.Delete(cc)
		_ = sh.Delete(sc)
		c.Close()
		s.Close()
	}
}

func cookie(fd int) uint64 {
	v, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		log.Fatal("SO_COOKIE: ", err)
	}
	return v
}

func fdOf(c net.Conn) int {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		log.Fatal(err)
	}
	var fd int
	_ = rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}
