package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// NewScheme holds every type the operator reads or writes: Kubernetes' built-in types and EtcdCluster.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}
