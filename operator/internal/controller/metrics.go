package controller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/plan"
)

// clusterMetrics are per-cluster gauges beside controller-runtime's own metrics, served on the same
// endpoint. The leader-change count is kept in memory: a metric, never state the operator acts on.
type clusterMetrics struct {
	members, healthy, learner, dbSize *prometheus.GaugeVec
	leaderChanges, etcdRequests       *prometheus.CounterVec

	mu         sync.Mutex
	lastLeader map[string]string // namespace/name -> leader ID
}

var (
	registerOnce sync.Once
	shared       *clusterMetrics
)

// newClusterMetrics registers the gauges once per process (tests build several reconcilers).
func newClusterMetrics() *clusterMetrics {
	registerOnce.Do(func() {
		labels := []string{"namespace", "cluster"}
		shared = &clusterMetrics{
			members: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_operator_cluster_members",
				Help: "Members in etcd's member list (voters and learners)."}, labels),
			healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_operator_cluster_healthy_members",
				Help: "Members that answered the last health check."}, labels),
			learner: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_operator_cluster_learner_present",
				Help: "1 while a learner is in the member list."}, labels),
			dbSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_operator_member_db_size_bytes",
				Help: "Backend database size reported by each member."}, append(labels, "member")),
			leaderChanges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_operator_cluster_leader_changes_seen_total",
				Help: "Leader changes the operator observed between reconciles."}, labels),
			etcdRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_operator_etcd_requests_total",
				Help: "Calls the operator made to etcd clusters, by operation and outcome (ok, error)."}, []string{"operation", "outcome"}),
			lastLeader: map[string]string{},
		}
		metrics.Registry.MustRegister(shared.members, shared.healthy, shared.learner, shared.dbSize, shared.leaderChanges, shared.etcdRequests)
	})
	return shared
}

func (m *clusterMetrics) observe(cluster *etcdv1.EtcdCluster, obs *observation) {
	if m == nil || obs.listErr != nil {
		return
	}
	ns, name := cluster.Namespace, cluster.Name
	m.members.WithLabelValues(ns, name).Set(float64(len(obs.members)))
	m.healthy.WithLabelValues(ns, name).Set(float64(count(obs.plan, func(x plan.Member) bool { return x.InEtcd && x.Healthy })))
	learner := 0.0
	m.dbSize.DeletePartialMatch(prometheus.Labels{"namespace": ns, "cluster": name})
	for _, ms := range cluster.Status.Members {
		if ms.Role == etcdv1.RoleLearner {
			learner = 1
		}
		m.dbSize.WithLabelValues(ns, name, ms.Name).Set(float64(ms.DBSizeBytes))
	}
	m.learner.WithLabelValues(ns, name).Set(learner)

	m.mu.Lock()
	defer m.mu.Unlock()
	key := ns + "/" + name
	if prev, seen := m.lastLeader[key]; seen && prev != cluster.Status.LeaderID && cluster.Status.LeaderID != "" {
		m.leaderChanges.WithLabelValues(ns, name).Inc()
	}
	if cluster.Status.LeaderID != "" {
		m.lastLeader[key] = cluster.Status.LeaderID
	}
}

// forget drops a deleted cluster's series.
func (m *clusterMetrics) forget(ns, name string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"namespace": ns, "cluster": name}
	for _, v := range []*prometheus.GaugeVec{m.members, m.healthy, m.learner, m.dbSize} {
		v.DeletePartialMatch(l)
	}
	m.leaderChanges.DeletePartialMatch(l)
	m.mu.Lock()
	delete(m.lastLeader, ns+"/"+name)
	m.mu.Unlock()
}
