// Package planner is tandem's capacity planner: the queueing models of seed 003
// (Elnikety, Dropsho, Cecchet and Zwaenepoel, "Predicting Replicated Database
// Scalability from Standalone Database Profiling", EuroSys 2009) that predict
// the throughput, response time, abort rate and bottleneck of the multi-master
// and single-master designs from a profile measured on one standalone database.
//
// The package owns:
//
//   - exact mean value analysis (MVA) of closed queueing networks with
//     queueing and delay centres, single class (SolveMVA) and two classes
//     (SolveMVA2);
//   - the multi-master model (seed 003 §3.2.1, §3.3.2, §4.1.1), with writeset
//     apply cost, retries of aborted transactions and abort growth through the
//     conflict window, iterated to a fixed point;
//   - the single-master model (§3.2.2, §3.3.3) with the master/slave balancing
//     algorithm of the paper's figure 3;
//   - workload profiles (the JSON format and the built-in profiles copied from
//     the paper's tables 2 to 5), predictions as JSON, comparison of a
//     prediction with measurements, and text, HTML and SVG reports.
//
// It is pure computation. It must not open connections, start or inspect
// clusters, nodes or back ends, or import any package that does: measuring a
// profile on a live database belongs to the benchmark driver, which hands the
// planner a Profile.
package planner
