//go:build race

package router

// raceOn: the race detector is on (sync.Pool then drops items at random,
// so code that pools buffers, crypto/tls among it, allocates).
const raceOn = true
