// Command grpc-health-probe checks a gRPC server's health service, as the grpc_health_probe that OLM v0
// runs in catalog Pods (`grpc_health_probe -addr=:50051` for readiness, liveness and startup). The catalog
// image ships it as /bin/grpc_health_probe; the upstream binary is not served by the module proxy.
// Exit codes follow upstream: 0 serving, 1 bad flags, 2 cannot connect, 3 the RPC failed, 4 not serving.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const (
	exitOK = iota
	exitFlags
	exitConnect
	exitRPC
	exitNotServing
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("grpc_health_probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "address of the gRPC server, host:port (required), e.g. :50051")
	service := fs.String("service", "", "service name to check (empty: the server as a whole)")
	connectTimeout := fs.Duration("connect-timeout", time.Second, "timeout for establishing the connection")
	rpcTimeout := fs.Duration("rpc-timeout", time.Second, "timeout for the health check call")
	if err := fs.Parse(args); err != nil {
		return exitFlags
	}
	if *addr == "" || *connectTimeout <= 0 || *rpcTimeout <= 0 {
		fmt.Fprintln(stderr, "error: -addr is required (for example -addr=:50051) and timeouts must be positive")
		return exitFlags
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(stderr, "error: connect to %s: %v\n", *addr, err)
		return exitConnect
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), *connectTimeout+*rpcTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: *service}, grpc.WaitForReady(true))
	if err != nil {
		fmt.Fprintf(stderr, "error: health check of %s: %v\n", *addr, err)
		if ctx.Err() != nil {
			return exitConnect
		}
		return exitRPC
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		fmt.Fprintf(stderr, "service unhealthy (responded with %q)\n", resp.GetStatus())
		return exitNotServing
	}
	fmt.Println("status: SERVING")
	return exitOK
}
