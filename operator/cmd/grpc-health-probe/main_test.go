package main

import (
	"io"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestProbe(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	addr := lis.Addr().String()

	if code := run([]string{"-addr=" + addr}, io.Discard); code != exitOK {
		t.Fatalf("serving server: exit %d", code)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if code := run([]string{"-addr=" + addr}, io.Discard); code != exitNotServing {
		t.Fatalf("not serving: exit %d, want %d", code, exitNotServing)
	}
	if code := run([]string{"-addr=" + addr, "-service=nope"}, io.Discard); code != exitRPC {
		t.Fatalf("unknown service: exit %d, want %d", code, exitRPC)
	}
	srv.Stop()
	if code := run([]string{"-addr=" + addr, "-connect-timeout=200ms", "-rpc-timeout=200ms"}, io.Discard); code != exitConnect {
		t.Fatalf("no server: exit %d, want %d", code, exitConnect)
	}
	var out strings.Builder
	if code := run(nil, &out); code != exitFlags || !strings.Contains(out.String(), "-addr is required") {
		t.Fatalf("missing -addr: exit %d, %q", code, out.String())
	}
}
