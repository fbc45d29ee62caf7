package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func noEnv(string) string { return "" }

func TestParseOptionsDefaults(t *testing.T) {
	o, err := parseOptions(nil, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.clusterDomain != "cluster.local" || o.imageRepository != "quay.io/coreos/etcd" || o.resync != 10*time.Second || o.concurrency != 4 || o.namespaces != nil {
		t.Fatalf("defaults: %+v", o)
	}
}

func TestParseOptionsNamespaces(t *testing.T) {
	env := func(k string) string {
		if k == "WATCH_NAMESPACE" {
			return "a, b"
		}
		return ""
	}
	o, err := parseOptions(nil, env, io.Discard)
	if err != nil || !slices.Equal(o.namespaces, []string{"a", "b"}) {
		t.Fatalf("from WATCH_NAMESPACE: %v %v", o.namespaces, err)
	}
	o, err = parseOptions([]string{"--watch-namespaces=c"}, env, io.Discard)
	if err != nil || !slices.Equal(o.namespaces, []string{"c"}) {
		t.Fatalf("the flag must win over the environment: %v %v", o.namespaces, err)
	}
	o, err = parseOptions([]string{"--metrics-bind-address=0"}, noEnv, io.Discard)
	if err != nil || o.metricsAddr != "0" {
		t.Fatalf("metrics disabled with 0: %v", err)
	}
}

func TestParseOptionsRejectsBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string // the flag named in the error, and part of the fix
	}{
		{[]string{"--cluster-domain=Cluster_Local"}, "--cluster-domain=\"Cluster_Local\" is not a DNS domain; use your cluster's domain"},
		{[]string{"--etcd-image-repository=quay.io/coreos/etcd:v3.6.7"}, "--etcd-image-repository=\"quay.io/coreos/etcd:v3.6.7\" must be a repository without tag"},
		{[]string{"--resync-interval=10ms"}, "--resync-interval=10ms is below 1s"},
		{[]string{"--leader-elect-lease-duration=1s"}, "--leader-elect-lease-duration=1s must be between 2s and 5m"},
		{[]string{"--max-concurrent-reconciles=0"}, "--max-concurrent-reconciles=0 must be between 1 and 64"},
		{[]string{"--metrics-bind-address=8080"}, "--metrics-bind-address=\"8080\" is not host:port"},
		{[]string{"--health-probe-bind-address=localhost"}, "--health-probe-bind-address=\"localhost\" is not host:port"},
		{[]string{"--watch-namespaces=ok,Not_A_Namespace"}, "has \"Not_A_Namespace\", which is not a namespace name"},
		{[]string{"extra"}, "unexpected argument \"extra\""},
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"--resync-interval=soon"}, "invalid value \"soon\" for flag -resync-interval"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := parseOptions(tt.args, noEnv, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseOptionsReportsEveryError(t *testing.T) {
	_, err := parseOptions([]string{"--cluster-domain=_", "--max-concurrent-reconciles=100"}, noEnv, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--cluster-domain") || !strings.Contains(err.Error(), "--max-concurrent-reconciles") {
		t.Fatalf("want both errors at once, got %v", err)
	}
}

func TestParseCrashAfter(t *testing.T) {
	kinds, err := parseCrashAfter(" AddLearner, Promote ")
	if err != nil || len(kinds) != 2 || kinds[0] != "AddLearner" || kinds[1] != "Promote" {
		t.Fatalf("parseCrashAfter: %v %v", kinds, err)
	}
	if kinds, err := parseCrashAfter(""); err != nil || kinds != nil || crashAfter(kinds) != nil {
		t.Fatalf("empty value must disable the hook: %v %v", kinds, err)
	}
	if kinds, err := parseCrashAfter("any"); err != nil || len(kinds) != len(crashableKinds) {
		t.Fatalf("any: %v %v", kinds, err)
	}
	_, err = parseCrashAfter("AddLearner,Explode")
	if err == nil || !strings.Contains(err.Error(), crashEnv) || !strings.Contains(err.Error(), `"Explode"`) {
		t.Fatalf("a bad kind must be named with the variable: %v", err)
	}
}
