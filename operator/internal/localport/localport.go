// Package localport hands out free loopback addresses for servers a test or benchmark starts itself
// (etcd members on 127.0.0.1).
package localport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
)

var (
	mu sync.Mutex
	// Ports come from 20000-32767, below the kernel's ephemeral range, so an outgoing connection cannot
	// take one between Free and the server binding it; a random start keeps parallel test binaries apart.
	next = 20000 + rand.IntN(12000)
)

// Free returns a 127.0.0.1 address nobody listens on, never the same one twice in a process unless the
// range wrapped.
func Free() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		next++
		if next >= 32768 {
			next = 20000
		}
		addr := fmt.Sprintf("127.0.0.1:%d", next)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken by someone else
		}
		_ = l.Close()
		return addr, nil
	}
	return "", errors.New("no free loopback port in 20000-32767")
}
