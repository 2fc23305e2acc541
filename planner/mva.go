package planner

import (
	"fmt"
	"math"
)

// CenterKind tells how a centre of a queueing network serves its customers.
type CenterKind int

const (
	// Queueing is a single server with a queue (a CPU, a disk): a customer's
	// residence time grows with the number of customers it finds there.
	Queueing CenterKind = iota + 1
	// Delay is an infinite-server centre (a network hop, the certifier): the
	// residence time is the demand, whatever the load.
	Delay
)

// String returns "queueing" or "delay".
func (k CenterKind) String() string {
	switch k {
	case Queueing:
		return "queueing"
	case Delay:
		return "delay"
	default:
		return fmt.Sprintf("CenterKind(%d)", int(k))
	}
}

// Center is one service centre of a single-class closed network.
type Center struct {
	Name string
	Kind CenterKind
	// Demand is the total service one transaction needs here, in seconds
	// (visits times service time per visit).
	Demand float64
}

// Network is a single-class closed queueing network: a fixed population of
// clients cycles between thinking (the think-time delay centre) and the
// centres.
type Network struct {
	// Think is the think time Z in seconds, the delay centre in which clients
	// sit between transactions. It is not part of the response time.
	Think   float64
	Centers []Center
}

// CenterResult is the state of one centre at a given population.
type CenterResult struct {
	Center
	// Residence is the time one transaction spends at the centre, queueing
	// included, in seconds (R_k).
	Residence float64
	// Queue is the mean number of customers at the centre (Q_k).
	Queue float64
	// ArrivalQueue is the mean number of customers an arriving customer finds
	// there: by the arrival theorem, Q_k at one customer fewer.
	ArrivalQueue float64
	// Utilization is X·D_k: the busy fraction of a queueing centre, the mean
	// number of busy servers of a delay centre.
	Utilization float64
}

// Solution is the MVA solution of a network at one population.
type Solution struct {
	Population int
	// Throughput is X, transactions per second.
	Throughput float64
	// ResponseTime is the sum of the residence times, in seconds; think time
	// excluded.
	ResponseTime float64
	Centers      []CenterResult
}

// Center returns the result of the centre called name.
func (s Solution) Center(name string) (CenterResult, bool) {
	for _, c := range s.Centers {
		if c.Name == name {
			return c, true
		}
	}
	return CenterResult{}, false
}

func validateCenters(think float64, names []string, kinds []CenterKind, demands []float64) error {
	if math.IsNaN(think) || math.IsInf(think, 0) || think < 0 {
		return fmt.Errorf("%w: think time must be a finite number >= 0, got %g", ErrInvalidNetwork, think)
	}
	for i := range names {
		if kinds[i] != Queueing && kinds[i] != Delay {
			return fmt.Errorf("%w: centre %q: unknown kind %v", ErrInvalidNetwork, names[i], kinds[i])
		}
		d := demands[i]
		if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
			return fmt.Errorf("%w: centre %q: demand must be a finite number >= 0, got %g", ErrInvalidNetwork, names[i], d)
		}
	}
	return nil
}

func (net Network) parts() ([]string, []CenterKind, []float64) {
	names := make([]string, len(net.Centers))
	kinds := make([]CenterKind, len(net.Centers))
	demands := make([]float64, len(net.Centers))
	for i, c := range net.Centers {
		names[i], kinds[i], demands[i] = c.Name, c.Kind, c.Demand
	}
	return names, kinds, demands
}

// SolveMVA solves a single-class closed network exactly for the given
// population with the mean value analysis recursion (Lazowska et al. 1984,
// ch. 6):
//
//	R_k(n) = D_k·(1 + Q_k(n-1))   queueing centre
//	R_k(n) = D_k                  delay centre
//	X(n)   = n / (Z + Σ_k R_k(n))
//	Q_k(n) = X(n)·R_k(n)
func SolveMVA(net Network, population int) (Solution, error) {
	curve, err := SolveMVACurve(net, population)
	if err != nil {
		return Solution{}, err
	}
	return curve[population], nil
}

// SolveMVACurve returns the exact solutions for every population from 0 to
// population, in order.
func SolveMVACurve(net Network, population int) ([]Solution, error) {
	names, kinds, demands := net.parts()
	if err := validateCenters(net.Think, names, kinds, demands); err != nil {
		return nil, err
	}
	return solveSteps(net.Think, names, kinds, population, func(int, Solution) ([]float64, error) {
		return demands, nil
	})
}

// demandFunc gives the demands to use at population n, knowing the solution
// at population n-1. It lets a model make its demands depend on the state of
// the previous MVA iteration, as seed 003 §4.1.1 does with the conflict window.
type demandFunc func(n int, prev Solution) ([]float64, error)

// solveSteps runs the MVA recursion from 0 to population customers, asking
// demandsAt for the demands of each step.
func solveSteps(think float64, names []string, kinds []CenterKind, population int, demandsAt demandFunc) ([]Solution, error) {
	if population < 0 {
		return nil, fmt.Errorf("%w: population must be >= 0, got %d", ErrInvalidNetwork, population)
	}
	k := len(names)
	out := make([]Solution, 0, population+1)
	zero := Solution{Centers: make([]CenterResult, k)}
	d0, err := demandsAt(0, Solution{})
	if err != nil {
		return nil, err
	}
	if err := validateCenters(think, names, kinds, d0); err != nil {
		return nil, err
	}
	for i := range names {
		// With nobody in the network a customer would find no queue: the
		// residence times are the demands.
		zero.Centers[i] = CenterResult{Center: Center{Name: names[i], Kind: kinds[i], Demand: d0[i]}, Residence: d0[i]}
		zero.ResponseTime += d0[i]
	}
	out = append(out, zero)
	for n := 1; n <= population; n++ {
		prev := out[n-1]
		d, err := demandsAt(n, prev)
		if err != nil {
			return nil, err
		}
		if err := validateCenters(think, names, kinds, d); err != nil {
			return nil, err
		}
		s := Solution{Population: n, Centers: make([]CenterResult, k)}
		cycle := think
		for i := range names {
			c := CenterResult{Center: Center{Name: names[i], Kind: kinds[i], Demand: d[i]}, ArrivalQueue: prev.Centers[i].Queue}
			if kinds[i] == Queueing {
				c.Residence = d[i] * (1 + c.ArrivalQueue)
			} else {
				c.Residence = d[i]
			}
			s.ResponseTime += c.Residence
			s.Centers[i] = c
		}
		cycle += s.ResponseTime
		if cycle <= 0 {
			return nil, fmt.Errorf("%w: think time and all demands are zero: throughput is unbounded", ErrInvalidNetwork)
		}
		s.Throughput = float64(n) / cycle
		for i := range s.Centers {
			s.Centers[i].Queue = s.Throughput * s.Centers[i].Residence
			s.Centers[i].Utilization = s.Throughput * s.Centers[i].Demand
		}
		out = append(out, s)
	}
	return out, nil
}

// interpolate returns the solution at a fractional population x (0 <= x <=
// len(curve)-1) by linear interpolation of throughput and queue lengths
// between the exact solutions at floor(x) and ceil(x); residence times follow
// from Little's law. At an integer x it is the exact solution.
//
// The single-master balancing (figure 3 of seed 003) distributes N·C clients
// in proportions Pr and Pw, which are rarely whole numbers of clients; the
// interpolation makes the throughputs continuous in the split so the balance
// Pr:Pw can be met exactly.
func interpolate(curve []Solution, x float64) Solution {
	if x <= 0 {
		return curve[0]
	}
	lo := int(math.Floor(x))
	if lo >= len(curve)-1 {
		return curve[len(curve)-1]
	}
	f := x - float64(lo)
	if f == 0 {
		return curve[lo]
	}
	a, b := curve[lo], curve[lo+1]
	s := Solution{Population: lo, Throughput: lerp(a.Throughput, b.Throughput, f), Centers: make([]CenterResult, len(a.Centers))}
	for i := range a.Centers {
		c := CenterResult{Center: b.Centers[i].Center}
		c.Demand = lerp(a.Centers[i].Demand, b.Centers[i].Demand, f)
		c.Queue = lerp(a.Centers[i].Queue, b.Centers[i].Queue, f)
		c.ArrivalQueue = lerp(a.Centers[i].ArrivalQueue, b.Centers[i].ArrivalQueue, f)
		c.Utilization = s.Throughput * c.Demand
		if s.Throughput > 0 {
			c.Residence = c.Queue / s.Throughput
		} else {
			c.Residence = c.Demand
		}
		s.ResponseTime += c.Residence
		s.Centers[i] = c
	}
	return s
}

func lerp(a, b, f float64) float64 { return a + (b-a)*f }
