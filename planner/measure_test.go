package planner

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestServiceDemand(t *testing.T) {
	d, err := ServiceDemand(2.5, 1000)
	if err != nil || math.Abs(d-0.0025) > 1e-15 {
		t.Fatalf("ServiceDemand(2.5, 1000) = %g, %v", d, err)
	}
	for _, c := range []struct{ busy, n float64 }{{1, 0}, {1, -3}, {-1, 10}, {math.NaN(), 10}, {1, math.Inf(1)}} {
		if _, err := ServiceDemand(c.busy, c.n); !errors.Is(err, ErrInvalidProfile) {
			t.Errorf("ServiceDemand(%g, %g): err %v, want ErrInvalidProfile", c.busy, c.n, err)
		}
	}
}

func measured() MeasuredProfile {
	return MeasuredProfile{
		Name: "tm1-r80w20", Workload: "tm1", Mix: "r80w20",
		Pr: 0.8, Pw: 0.2, A1: 0.001, L1: 0.004,
		Reads:             PhaseBusy{Busy: map[string]float64{"cpu": 4, "disk": 0.1}, Completions: 40000},
		Updates:           PhaseBusy{Busy: map[string]float64{"cpu": 6, "disk": 3}, Completions: 20000, SenderBusy: map[string]float64{"cpu": 1.5}},
		Writesets:         PhaseBusy{Busy: map[string]float64{"cpu": 2, "disk": 1}, Completions: 25000},
		Resources:         []string{"cpu", "disk"},
		ClientsPerReplica: 8,
		Trust:             map[string]string{"pr": "exact"},
	}
}

func TestProfileFromMeasurements(t *testing.T) {
	p, err := ProfileFromMeasurements(measured())
	if err != nil {
		t.Fatal(err)
	}
	want := []Resource{{Name: "cpu", RC: 4.0 / 40000, WC: 6.0 / 20000, WS: 2.0 / 25000, WSend: 1.5 / 20000}, {Name: "disk", RC: 0.1 / 40000, WC: 3.0 / 20000, WS: 1.0 / 25000}}
	for i, r := range p.Resources {
		w := want[i]
		if r.Name != w.Name || math.Abs(r.RC-w.RC) > 1e-15 || math.Abs(r.WC-w.WC) > 1e-15 || math.Abs(r.WS-w.WS) > 1e-15 || math.Abs(r.WSend-w.WSend) > 1e-15 {
			t.Errorf("resource %d = %+v, want %+v", i, r, w)
		}
	}
	if p.Version != ProfileVersion || p.Trust["pr"] != "exact" {
		t.Errorf("profile %+v", p)
	}
	// D(1) = Pr·rc + Pw/(1 − A1)·wc (seed 003 §3.3.1).
	d, ok := p.StandaloneDemand("cpu")
	if wantD := 0.8*4.0/40000 + 0.2/(1-0.001)*6.0/20000; !ok || math.Abs(d-wantD) > 1e-15 {
		t.Errorf("StandaloneDemand(cpu) = %g, %v; want %g", d, ok, wantD)
	}
	if _, ok := p.StandaloneDemand("net"); ok {
		t.Error("StandaloneDemand of an unknown resource reported ok")
	}
	var buf bytes.Buffer
	if err := EncodeProfile(&buf, p); err != nil {
		t.Fatal(err)
	}
	back, err := DecodeProfile(&buf)
	if err != nil || back.Resources[1] != p.Resources[1] || back.A1 != p.A1 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func TestProfileFromMeasurementsReadOnlyMix(t *testing.T) {
	m := measured()
	m.Pr, m.Pw, m.A1, m.L1 = 1, 0, 0, 0
	m.Updates, m.Writesets = PhaseBusy{}, PhaseBusy{}
	p, err := ProfileFromMeasurements(m)
	if err != nil {
		t.Fatal(err)
	}
	if p.Resources[0].WC != 0 || p.Resources[0].WS != 0 || p.Resources[0].RC == 0 {
		t.Errorf("read-only mix: %+v", p.Resources[0])
	}
}

func TestProfileFromMeasurementsErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		modify func(*MeasuredProfile)
		want   string
	}{
		{"no reads", func(m *MeasuredProfile) { m.Reads.Completions = 0 }, "read-only phase"},
		{"no writesets", func(m *MeasuredProfile) { m.Writesets.Completions = 0 }, "writeset-apply phase"},
		{"resource not measured", func(m *MeasuredProfile) { delete(m.Updates.Busy, "disk") }, `update phase: resource "disk"`},
		{"no resources", func(m *MeasuredProfile) { m.Resources = nil }, "resources"},
		{"bad mix", func(m *MeasuredProfile) { m.Pw = 0.3 }, "pr + pw"},
		{"negative busy", func(m *MeasuredProfile) { m.Reads.Busy["cpu"] = -1 }, "busy time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := measured()
			c.modify(&m)
			_, err := ProfileFromMeasurements(m)
			if !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalidProfile mentioning %q", err, c.want)
			}
		})
	}
}
