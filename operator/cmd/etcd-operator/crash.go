package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/quorumkit/etcd-operator/operator/internal/plan"
)

// crashEnv names the action kinds after which the operator exits at once, as if killed, before it writes
// status. It exists for the end-to-end suite, which proves that a cluster converges whatever step the
// operator dies after; production deployments never set it. Each process exits after the first matching
// step it takes, so a restarted operator always gets one step further and the cluster still converges.
const crashEnv = "ETCD_OPERATOR_CRASH_AFTER"

// crashExitCode is what the operator exits with when crashEnv fires, so logs tell it from a real failure.
const crashExitCode = 3

var crashableKinds = []plan.Kind{plan.Bootstrap, plan.CreatePod, plan.AddLearner, plan.Promote,
	plan.MoveLeader, plan.RemoveMember, plan.DeletePod, plan.DeletePVC, plan.Upgrade}

// parseCrashAfter reads crashEnv: a comma-separated list of action kinds, or "any".
func parseCrashAfter(value string) ([]plan.Kind, error) {
	var kinds []plan.Kind
	for _, field := range strings.Split(value, ",") {
		field = strings.TrimSpace(field)
		switch {
		case field == "":
		case field == "any":
			kinds = append(kinds, crashableKinds...)
		case slices.Contains(crashableKinds, plan.Kind(field)):
			kinds = append(kinds, plan.Kind(field))
		default:
			return nil, fmt.Errorf("%s has %q, which is not an action kind; use \"any\" or some of %v separated by commas", crashEnv, field, crashableKinds)
		}
	}
	return kinds, nil
}

// crashAfter returns the hook that ends the process after the first step of one of kinds, or nil.
func crashAfter(kinds []plan.Kind) func(plan.Action) {
	if len(kinds) == 0 {
		return nil
	}
	return func(a plan.Action) {
		if slices.Contains(kinds, a.Kind) {
			fmt.Fprintf(os.Stderr, "etcd-operator: %s=%s: exiting after %s %s, before writing status\n",
				crashEnv, os.Getenv(crashEnv), a.Kind, a.Member)
			os.Exit(crashExitCode)
		}
	}
}
