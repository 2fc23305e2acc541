package node

import (
	"encoding/json"
	"net/http"
)

// registerAdmin serves the operator actions on the node's admin address:
// POST /admin/promote, /admin/demote?to=ID, /admin/follow?primary=ID,
// /admin/set?safeness=...&durability=...
func registerAdmin(mux *http.ServeMux, r *Repl) {
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	post := func(h func(w http.ResponseWriter, req *http.Request)) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			if req.Method != http.MethodPost {
				http.Error(w, "use POST", http.StatusMethodNotAllowed)
				return
			}
			h(w, req)
		}
	}
	mux.HandleFunc("/admin/promote", post(func(w http.ResponseWriter, req *http.Request) {
		res, err := r.Promote(req.Context())
		reply(w, res, err)
	}))
	mux.HandleFunc("/admin/demote", post(func(w http.ResponseWriter, req *http.Request) {
		last, err := r.Demote(req.Context(), req.URL.Query().Get("to"))
		reply(w, map[string]uint64{"last_gsn": last}, err)
	}))
	mux.HandleFunc("/admin/follow", post(func(w http.ResponseWriter, req *http.Request) {
		err := r.Follow(req.Context(), req.URL.Query().Get("primary"))
		reply(w, r.Status(), err)
	}))
	mux.HandleFunc("/admin/set", post(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		err := r.Set(q.Get("safeness"), q.Get("durability"))
		reply(w, r.Status(), err)
	}))
}
