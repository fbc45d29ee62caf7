// Command coredns is CoreDNS with only the plugins the local test cluster uses: cluster DNS from the
// kubernetes plugin, bound to one address, with health and readiness endpoints and query logging.
//
// CoreDNS's own main imports core/plugin, which registers every plugin and with them the SDKs of every
// cloud DNS provider; importing only coremain and the plugins below keeps the build a fraction of that.
// There is deliberately no forward plugin (the cluster has no upstream resolver) and no cache (a cached
// negative answer would delay peers that look each other up while their records are being published).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// Each import registers one plugin with CoreDNS's setup machinery.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is the order in which a query passes the plugins, the same relative order as CoreDNS's
// generated list. A Corefile may only name plugins that appear here.
var directives = []string{
	"bind",
	"ready",
	"health",
	"errors",
	"log",
	"kubernetes",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
