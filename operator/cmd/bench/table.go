package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/floor"
)

// print writes the table: each figure's median, the floor measured in this run where one exists, the
// ratio, and the goal the issue set.
func (b *bench) print(w io.Writer, floors [2]floor.Floors) {
	f3, f5 := floors[0], floors[1]
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure (median of %d)\toperator\tfloor\tratio\tgoal\n", b.runs)
	row := func(name string, got []time.Duration, floorRuns []time.Duration, goal string) {
		m := floor.Median(got)
		if floorRuns == nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t%s\n", name, round(m), goal)
			return
		}
		fm := floor.Median(floorRuns)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\t%s\n", name, round(m), round(fm), float64(m)/float64(fm), goal)
	}
	row("apply to Available, 3 members", b.create3, f3.Bootstrap, "within 2x floor")
	row("apply to Available, 5 members", b.create5, f5.Bootstrap, "within 2x floor")
	row("scale-up 3->5, per added member", b.scaleUpPerMember, nil, "-")
	row("member Pod deleted -> all healthy", b.podDeleted, f3.FollowerRecovery, "under 10s")
	row("etcd process killed -> all healthy", b.processKilled, f3.FollowerRecovery, "under 10s")
	row("rolling upgrade 3.5->3.6, 3 members", b.upgrade, nil, "under 30s")
	fmt.Fprintf(tw, "failed client operations during upgrade\t%d (max %d)\t-\t-\t0 beyond retried ones\n",
		medianInt(b.upgradeFailedOps), slices.Max(append([]int{0}, b.upgradeFailedOps...)))
	i := b.idle
	fmt.Fprintf(tw, "idle, %d clusters: Kubernetes API requests/min\t%.0f\t-\t-\t-\n", i.clusters, i.apiPerMinute)
	fmt.Fprintf(tw, "idle, %d clusters: etcd requests/min\t%.0f\t-\t-\t-\n", i.clusters, i.etcdPerMinute)
	fmt.Fprintf(tw, "idle, %d clusters: operator resident memory\t%.1f MiB\t-\t-\t-\n", i.clusters, float64(i.rssBytes)/(1<<20))
	_ = tw.Flush()
	fmt.Fprintf(w, "\nfloor: the same etcd binary bootstrapped statically on loopback, no Kubernetes; failure floor: a follower killed with SIGKILL and restarted on its data.\n")
	fmt.Fprintf(w, "idle figures over one window of %s (one sample, not a median); operator restarts during it: %d.\n", i.window.Round(time.Second), i.operatorRestarts)
}

func round(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

func medianInt(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
