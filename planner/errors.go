package planner

import "errors"

// Sentinel errors. Every error the package returns wraps one of these, so
// callers can test them with errors.Is; the wrapping text names the field,
// parameter or centre at fault.
var (
	// ErrInvalidNetwork reports a queueing network that cannot be solved:
	// negative demands, a negative population, or a zero cycle time.
	ErrInvalidNetwork = errors.New("invalid queueing network")
	// ErrInvalidProfile reports a profile field that is missing or out of range.
	ErrInvalidProfile = errors.New("invalid profile")
	// ErrUnknownProfile reports a profile name that is not built in.
	ErrUnknownProfile = errors.New("unknown profile")
	// ErrInvalidParams reports a bad model parameter (clients, delays, replicas).
	ErrInvalidParams = errors.New("invalid model parameter")
	// ErrUnknownDesign reports a design the planner has no model for.
	ErrUnknownDesign = errors.New("unknown design")
	// ErrNotConverged reports a fixed-point iteration that did not settle.
	ErrNotConverged = errors.New("model did not converge")
	// ErrNotBalanced reports that the single-master balancing search found no
	// split of the clients whose read:write throughput ratio is Pr:Pw.
	ErrNotBalanced = errors.New("single-master load could not be balanced")
	// ErrAbortsDiverge reports an abort rate that climbs towards 1: every
	// update is retried almost forever, far outside the small-abort
	// assumption of the models (seed 003 §3.4).
	ErrAbortsDiverge = errors.New("abort rate diverges")
	// ErrNoPoint reports a comparison against a replica count the prediction
	// does not contain.
	ErrNoPoint = errors.New("prediction has no point for that replica count")
)
