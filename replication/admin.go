package replication

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/tandemdb/tandem/secure"
)

// registerAdmin serves the operator actions on the node's admin address:
// POST /admin/promote[?fenced_gsn=N&wait=DUR], /admin/fence, /admin/demote?to=ID,
// /admin/follow?primary=ID[&upto=GSN],
// /admin/set?safeness=...&durability=... Each needs the admin token.
func (r *Agent) RegisterAdmin(mux *http.ServeMux, token string, log *slog.Logger) {

	reply := secure.ReplyJSON
	post := func(h func(w http.ResponseWriter, req *http.Request)) http.Handler {
		return secure.AdminAction(token, log, h)
	}
	mux.Handle("/admin/promote", post(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		var fencedGSN uint64
		if v := q.Get("fenced_gsn"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				reply(w, nil, fmt.Errorf("fenced_gsn: %w", err))
				return
			}
			fencedGSN = n
		}
		wait := 10 * time.Second
		if v := q.Get("wait"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				reply(w, nil, fmt.Errorf("wait: %w", err))
				return
			}
			wait = d
		}
		if r.Automatic() {
			// failover = "automatic": the coordinator decides; it hands
			// the role over once the primary's lease is released (a
			// switchover, a fenced primary) or has lapsed.
			res, err := r.PromoteCoordinated(req.Context(), q.Get("reason"))
			reply(w, res, err)
			return
		}
		res, err := r.Promote(req.Context(), fencedGSN, wait)
		reply(w, res, err)
	}))
	mux.Handle("/admin/fence", post(func(w http.ResponseWriter, req *http.Request) {
		last, err := r.Fence()
		reply(w, map[string]uint64{"last_gsn": last}, err)
	}))
	mux.Handle("/admin/demote", post(func(w http.ResponseWriter, req *http.Request) {
		last, err := r.Demote(req.Context(), req.URL.Query().Get("to"))
		reply(w, map[string]uint64{"last_gsn": last}, err)
	}))
	mux.Handle("/admin/follow", post(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		var upto uint64
		if v := q.Get("upto"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				reply(w, nil, fmt.Errorf("upto: %w", err))
				return
			}
			upto = n
		}
		if r.Automatic() {
			reply(w, nil, fmt.Errorf("failover = \"automatic\": the coordinator's map decides whom node %s follows", r.id))
			return
		}
		err := r.Follow(req.Context(), q.Get("primary"), upto)
		reply(w, r.Status(), err)
	}))
	// GET /session?tag=T: the highest GSN this node committed or applied
	// for a router session tag (the router resolves a COMMIT that was in
	// flight at a failover with it).
	mux.Handle("/session", secure.RequireToken(token, log, false, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		g, found := r.sessions.Get(req.URL.Query().Get("tag"))
		reply(w, map[string]any{"gsn": g, "found": found, "role": r.role(), "epoch": r.epoch()}, nil)
	})))
	// GET /position: this node's role, epoch and applied GSN (on the
	// primary: every commit acknowledged so far is at or below it). The
	// router's strong and bounded reads wait for it on a replica.
	mux.Handle("/position", secure.RequireToken(token, log, false, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		g := r.applied.Load()
		if r.role() == RolePrimary {
			g = max(g, r.rlog.LastGSN()) // every acknowledged commit is at or below it
		}
		reply(w, map[string]any{"role": r.role(), "epoch": r.epoch(), "applied_gsn": g}, nil)
	})))
	mux.Handle("/admin/set", post(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		err := r.Set(q.Get("safeness"), q.Get("durability"))
		reply(w, r.Status(), err)
	}))
}

// watchHandler serves GET /watch: this node's role, epoch and primary as
// JSON lines: one now, one at every change, and a repeat every second (so
// a reader notices a stream that died). The router follows failovers by
// it instead of polling.
func (r *Agent) WatchHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fl, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			st, changed := r.stateNow()
			if err := enc.Encode(map[string]any{"node": r.id, "role": st.Role, "epoch": st.Epoch, "primary": st.Primary, "fenced": r.fenced.Load()}); err != nil {
				return
			}
			fl.Flush()
			select {
			case <-req.Context().Done():
				return
			case <-changed:
			case <-tick.C:
			}
		}
	})
}
