//go:build race

package sqlite

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true
