package planner

import (
	"fmt"
	"math"
)

// maxGridCells bounds the population vectors a two-class solution visits
// (about 40 bytes each).
const maxGridCells = 25_000_000

// ClassCenter is one centre of a two-class closed network.
type ClassCenter struct {
	Name string
	Kind CenterKind
	// Demand[c] is the service one class-c transaction needs here, seconds.
	Demand [2]float64
}

// ClassNetwork is a closed network with two customer classes, each with its
// own population, think time and demands. The single-master model uses it
// for the master, which serves read-only (class 0) and update (class 1)
// transactions.
type ClassNetwork struct {
	// Think[c] is the think time of class c, seconds.
	Think   [2]float64
	Centers []ClassCenter
}

// ClassCenterResult is the state of one centre of a two-class network.
type ClassCenterResult struct {
	Name   string
	Kind   CenterKind
	Demand [2]float64
	// Residence[c] is the time a class-c transaction spends here, seconds.
	// For a class with no customers it is what one arriving customer of
	// that class would see.
	Residence [2]float64
	// Queue[c] is the mean number of class-c customers here.
	Queue [2]float64
	// Utilization is Σ_c X_c·D_{c,k}.
	Utilization float64
}

// ClassSolution is the MVA solution of a two-class network at one population
// vector. Populations are float64 because the single-master balancing
// interpolates between whole populations.
type ClassSolution struct {
	Population   [2]float64
	Throughput   [2]float64
	ResponseTime [2]float64 // per class, seconds, think time excluded
	Centers      []ClassCenterResult
}

// Center returns the result of the centre called name.
func (s ClassSolution) Center(name string) (ClassCenterResult, bool) {
	for _, c := range s.Centers {
		if c.Name == name {
			return c, true
		}
	}
	return ClassCenterResult{}, false
}

func (net ClassNetwork) validate() error {
	names := make([]string, len(net.Centers))
	kinds := make([]CenterKind, len(net.Centers))
	for cls := 0; cls < 2; cls++ {
		d := make([]float64, len(net.Centers))
		for i, c := range net.Centers {
			names[i], kinds[i], d[i] = c.Name, c.Kind, c.Demand[cls]
		}
		if err := validateCenters(net.Think[cls], names, kinds, d); err != nil {
			return fmt.Errorf("class %d: %w", cls, err)
		}
	}
	return nil
}

// SolveMVA2 solves a two-class closed network exactly for populations n0 and
// n1 with the multi-class MVA recursion over all population vectors
// (Lazowska et al. 1984, ch. 7):
//
//	R_{c,k}(n) = D_{c,k}·(1 + Q_k(n - e_c))   queueing centre
//	R_{c,k}(n) = D_{c,k}                      delay centre
//	X_c(n)     = n_c / (Z_c + Σ_k R_{c,k}(n))
//	Q_k(n)     = Σ_c X_c(n)·R_{c,k}(n)
func SolveMVA2(net ClassNetwork, n0, n1 int) (ClassSolution, error) {
	g, err := newClassGrid(net, n0, n1)
	if err != nil {
		return ClassSolution{}, err
	}
	return g.cell(n0, n1), nil
}

// classGrid holds the exact two-class solution at every population vector
// (i, j), 0 <= i <= n0, 0 <= j <= n1: both throughputs and each centre's
// total queue, from which any cell's full solution is rebuilt.
type classGrid struct {
	net    ClassNetwork
	n0, n1 int
	x      [2][]float64
	q      [][]float64 // q[k][cell]
}

func newClassGrid(net ClassNetwork, n0, n1 int) (*classGrid, error) {
	if err := net.validate(); err != nil {
		return nil, err
	}
	if n0 < 0 || n1 < 0 {
		return nil, fmt.Errorf("%w: populations must be >= 0, got (%d, %d)", ErrInvalidNetwork, n0, n1)
	}
	if cells := float64(n0+1) * float64(n1+1); cells > maxGridCells {
		return nil, fmt.Errorf("%w: populations (%d, %d) need %.0f population vectors, more than the %d the exact two-class solver visits", ErrInvalidNetwork, n0, n1, cells, maxGridCells)
	}
	k := len(net.Centers)
	cells := (n0 + 1) * (n1 + 1)
	g := &classGrid{net: net, n0: n0, n1: n1, q: make([][]float64, k)}
	g.x[0] = make([]float64, cells)
	g.x[1] = make([]float64, cells)
	for ci := range g.q {
		g.q[ci] = make([]float64, cells)
	}
	r := make([]float64, k)
	res := make([]float64, k)
	for j := 0; j <= n1; j++ {
		for i := 0; i <= n0; i++ {
			at := g.idx(i, j)
			pop := [2]int{i, j}
			for ci := range r {
				r[ci] = 0
			}
			for cls := 0; cls < 2; cls++ {
				if pop[cls] == 0 {
					continue
				}
				seen := g.idx(i-1, j) // one class-0 customer fewer
				if cls == 1 {
					seen = g.idx(i, j-1)
				}
				cycle := net.Think[cls]
				for ci, c := range net.Centers {
					res[ci] = c.Demand[cls]
					if c.Kind == Queueing {
						res[ci] *= 1 + g.q[ci][seen]
					}
					cycle += res[ci]
				}
				if cycle <= 0 {
					return nil, fmt.Errorf("%w: class %d: think time and all demands are zero: throughput is unbounded", ErrInvalidNetwork, cls)
				}
				x := float64(pop[cls]) / cycle
				g.x[cls][at] = x
				for ci := range r {
					r[ci] += x * res[ci]
				}
			}
			for ci := range r {
				g.q[ci][at] = r[ci]
			}
		}
	}
	return g, nil
}

func (g *classGrid) idx(i, j int) int { return j*(g.n0+1) + i }

// cell rebuilds the full solution at population vector (i, j).
func (g *classGrid) cell(i, j int) ClassSolution {
	at := g.idx(i, j)
	pop := [2]int{i, j}
	s := ClassSolution{
		Population: [2]float64{float64(i), float64(j)},
		Throughput: [2]float64{g.x[0][at], g.x[1][at]},
		Centers:    make([]ClassCenterResult, len(g.net.Centers)),
	}
	for ci, c := range g.net.Centers {
		cr := ClassCenterResult{Name: c.Name, Kind: c.Kind, Demand: c.Demand}
		for cls := 0; cls < 2; cls++ {
			// Arrival theorem: a class-c arrival sees the network with one
			// class-c customer fewer; with none of its class present, it
			// sees the network as it is.
			seen := at
			if pop[cls] > 0 {
				if cls == 0 {
					seen = g.idx(i-1, j)
				} else {
					seen = g.idx(i, j-1)
				}
			}
			cr.Residence[cls] = c.Demand[cls]
			if c.Kind == Queueing {
				cr.Residence[cls] *= 1 + g.q[ci][seen]
			}
			cr.Queue[cls] = s.Throughput[cls] * cr.Residence[cls]
			cr.Utilization += s.Throughput[cls] * c.Demand[cls]
			s.ResponseTime[cls] += cr.Residence[cls]
		}
		s.Centers[ci] = cr
	}
	return s
}

// at interpolates the solution bilinearly at a fractional population vector
// (clamped to the grid).
func (g *classGrid) at(x0, x1 float64) ClassSolution {
	x0 = clampF(x0, 0, float64(g.n0))
	x1 = clampF(x1, 0, float64(g.n1))
	i, j := int(math.Floor(x0)), int(math.Floor(x1))
	f0, f1 := x0-float64(i), x1-float64(j)
	i1, j1 := min(i+1, g.n0), min(j+1, g.n1)
	lo := classLerp(g.cell(i, j), g.cell(i1, j), f0)
	if f1 == 0 {
		return lo
	}
	hi := classLerp(g.cell(i, j1), g.cell(i1, j1), f0)
	return classLerp(lo, hi, f1)
}

// classLerp interpolates two two-class solutions with weight f on b.
// Throughputs and queues are interpolated; residence times follow from
// Little's law (or are interpolated for a class with no throughput).
func classLerp(a, b ClassSolution, f float64) ClassSolution {
	if f == 0 {
		return a
	}
	if f == 1 {
		return b
	}
	s := ClassSolution{Centers: make([]ClassCenterResult, len(a.Centers))}
	for cls := 0; cls < 2; cls++ {
		s.Population[cls] = lerp(a.Population[cls], b.Population[cls], f)
		s.Throughput[cls] = lerp(a.Throughput[cls], b.Throughput[cls], f)
	}
	for i := range a.Centers {
		c := ClassCenterResult{Name: a.Centers[i].Name, Kind: a.Centers[i].Kind, Demand: a.Centers[i].Demand}
		for cls := 0; cls < 2; cls++ {
			c.Queue[cls] = lerp(a.Centers[i].Queue[cls], b.Centers[i].Queue[cls], f)
			if s.Throughput[cls] > 0 {
				c.Residence[cls] = c.Queue[cls] / s.Throughput[cls]
			} else {
				c.Residence[cls] = lerp(a.Centers[i].Residence[cls], b.Centers[i].Residence[cls], f)
			}
			c.Utilization += s.Throughput[cls] * c.Demand[cls]
			s.ResponseTime[cls] += c.Residence[cls]
		}
		s.Centers[i] = c
	}
	return s
}

// lazyGrid grows a classGrid on demand, doubling, up to a population limit.
type lazyGrid struct {
	net   ClassNetwork
	limit int
	g     *classGrid
}

func (lg *lazyGrid) at(x0, x1 float64) (ClassSolution, error) {
	need0 := min(int(math.Ceil(x0))+1, lg.limit)
	need1 := min(int(math.Ceil(x1))+1, lg.limit)
	if lg.g == nil || need0 > lg.g.n0 || need1 > lg.g.n1 {
		n0, n1 := need0, need1
		if lg.g != nil {
			n0 = min(max(n0, 2*lg.g.n0), lg.limit)
			n1 = min(max(n1, 2*lg.g.n1), lg.limit)
		}
		g, err := newClassGrid(lg.net, n0, n1)
		if err != nil {
			return ClassSolution{}, err
		}
		lg.g = g
	}
	return lg.g.at(x0, x1), nil
}
