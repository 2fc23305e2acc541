//go:build !race

package router

// raceOn: the race detector is on.
const raceOn = false
