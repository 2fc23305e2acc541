package scaleout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/secure"
)

// ErrNoRouterAdmin is a cluster whose router has no admin address
// (router.metrics) to ask.
var ErrNoRouterAdmin = errors.New("the cluster's router has no admin address (router.metrics)")

// RoutedTransactions asks the router's /status how many transactions it
// has routed to each node so far (both of its ports), by node ID.
func RoutedTransactions(ctx context.Context, c *config.Cluster) (map[string]uint64, error) {
	if c.Router == nil || c.Router.Metrics == "" {
		return nil, ErrNoRouterAdmin
	}
	cl := http.Client{Timeout: 2 * time.Second}
	if c.AdminTLS(c.Router.Metrics) {
		ident, err := node.Identity(c, secure.AdminID, nil)
		if err != nil {
			return nil, err
		}
		cl.Transport = &http.Transport{TLSClientConfig: ident.ClientTLS(secure.RouterID)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.AdminURL(c.Router.Metrics, "/status"), nil)
	if err != nil {
		return nil, err
	}
	if c.Security.MetricsAuth {
		token, err := node.AdminToken(c, false)
		if err != nil {
			return nil, fmt.Errorf("router /status: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("router /status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("router /status: %s", resp.Status)
	}
	var st []struct {
		ID           string `json:"id"`
		Transactions uint64 `json:"transactions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("router /status: %w", err)
	}
	out := make(map[string]uint64, len(st))
	for _, n := range st {
		out[n.ID] = n.Transactions
	}
	return out, nil
}
