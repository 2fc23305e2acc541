package sweep

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/secure"
)

// serverTLS issues a certificate for 127.0.0.1 in dir from a CA of its
// own there (package secure, as a cluster's), hands the directory, the
// certificate and its key to the server's OS user (PostgreSQL refuses a
// key others can read), and returns the settings that make a server
// speak TLS with them: the configurations whose clients encrypt end to
// end through HAProxy (ClientTLS), the way a PostgreSQL user of that stack
// encrypts (HAProxy in mode tcp cannot start PostgreSQL's TLS itself: the
// client's SSLRequest comes first).
func serverTLS(dir string) (map[string]string, error) {
	const id = "server"
	if _, err := secure.Issue(dir, []secure.Member{{ID: id, Hosts: []string{"127.0.0.1", "localhost"}}}, false); err != nil {
		return nil, err
	}
	crt, key := secure.CertFile(dir, id), secure.KeyFile(dir, id)
	cred, err := postgres.ServerCredential()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		for _, p := range []string{dir, crt, key} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("chown %s for the postgres user: %w", p, err)
			}
		}
	}
	return map[string]string{"ssl": "on", "ssl_cert_file": "'" + filepath.Clean(crt) + "'", "ssl_key_file": "'" + filepath.Clean(key) + "'"}, nil
}
