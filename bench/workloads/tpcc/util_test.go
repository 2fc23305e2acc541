package tpcc_test

import (
	"math"
	"math/rand/v2"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }
func sqrt(f float64) float64         { return math.Sqrt(f) }
func abs(f float64) float64          { return math.Abs(f) }
