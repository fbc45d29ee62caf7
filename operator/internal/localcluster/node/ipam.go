package node

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
)

// ipPool hands out the addresses of one node's pod CIDR. It skips the network address, the first host
// address (kept free, as a gateway would be in a real node's range) and the broadcast address, and
// allocates round-robin, so an address just released is not reused at once: a restarted Pod's old
// address may still sit in EndpointSlices or in a peer's connection for a moment.
type ipPool struct {
	mu     sync.Mutex
	prefix netip.Prefix
	used   map[netip.Addr]string // address -> owner (Pod UID)
	next   netip.Addr
}

func newIPPool(prefix netip.Prefix) (*ipPool, error) {
	prefix = prefix.Masked()
	if !prefix.Addr().Is4() || prefix.Bits() > 30 {
		return nil, fmt.Errorf("pod CIDR %s: need an IPv4 prefix of at most /30", prefix)
	}
	p := &ipPool{prefix: prefix, used: map[netip.Addr]string{}}
	p.next = p.first()
	return p, nil
}

func (p *ipPool) first() netip.Addr { return p.prefix.Addr().Next().Next() }

// last is the highest allocatable address: the one before broadcast.
func (p *ipPool) last() netip.Addr {
	a := p.prefix.Addr().As4()
	host := uint32(1)<<(32-p.prefix.Bits()) - 1
	v := (uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])) + host - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// allocate returns owner's address, the same one if owner already holds one.
func (p *ipPool) allocate(owner string) (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, o := range p.used {
		if o == owner {
			return a, nil
		}
	}
	first, last := p.first(), p.last()
	a := p.next
	for range 1 << (32 - p.prefix.Bits()) {
		if a.Compare(last) > 0 || a.Compare(first) < 0 {
			a = first
		}
		if _, taken := p.used[a]; !taken {
			p.used[a] = owner
			p.next = a.Next()
			return a, nil
		}
		a = a.Next()
	}
	return netip.Addr{}, errors.New("pod CIDR " + p.prefix.String() + " is exhausted")
}

// release frees owner's address, if it holds one.
func (p *ipPool) release(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, o := range p.used {
		if o == owner {
			delete(p.used, a)
		}
	}
}

// podCIDR is node i's pod range: 10.244.<i+1>.0/24 (10.244.0.0/24 holds the bridge and apiserver).
func podCIDR(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i + 1), 0}), 24)
}
