//go:build !linux

package bench

import (
	"context"
	"fmt"
	"net"
)

const threadWaitSupported = false

func dialThreadWait(context.Context, string, string) (net.Conn, error) {
	return nil, fmt.Errorf("%w: --wait thread needs Linux", ErrBadOption)
}
