package node

import (
	"net/netip"
	"testing"
)

func TestIPPool(t *testing.T) {
	p, err := newIPPool(netip.MustParsePrefix("10.244.1.0/29")) // .2 to .6 are allocatable
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.244.1.2", "10.244.1.3", "10.244.1.4", "10.244.1.5", "10.244.1.6"}
	for i, w := range want {
		a, err := p.allocate(string(rune('a' + i)))
		if err != nil || a.String() != w {
			t.Fatalf("allocation %d = %v, %v; want %s", i, a, err, w)
		}
	}
	if again, _ := p.allocate("b"); again.String() != "10.244.1.3" {
		t.Fatalf("same owner got a second address %v", again)
	}
	if a, err := p.allocate("z"); err == nil {
		t.Fatalf("exhausted pool handed out %v", a)
	}
	p.release("c") // frees .4
	p.release("a") // frees .2
	a, err := p.allocate("y")
	if err != nil || a.String() != "10.244.1.2" { // round-robin wraps to the lowest free after .6
		t.Fatalf("after release got %v, %v", a, err)
	}
	if a, _ := p.allocate("x"); a.String() != "10.244.1.4" {
		t.Fatalf("next allocation %v, want 10.244.1.4", a)
	}
}

func TestIPPoolRoundRobin(t *testing.T) {
	p, _ := newIPPool(podCIDR(0))
	a1, _ := p.allocate("one")
	p.release("one")
	a2, _ := p.allocate("two")
	if a1 == a2 {
		t.Fatalf("a released address %v was reused at once", a1)
	}
	if podCIDR(0).String() != "10.244.1.0/24" || podCIDR(2).String() != "10.244.3.0/24" {
		t.Fatalf("podCIDR: %v %v", podCIDR(0), podCIDR(2))
	}
	if _, err := newIPPool(netip.MustParsePrefix("10.0.0.0/31")); err == nil {
		t.Fatal("a /31 was accepted")
	}
}
