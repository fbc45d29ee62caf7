package bundle

import (
	"fmt"
	"slices"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// parts are the rendered config/manifests objects, sorted by what the bundle does with them.
type parts struct {
	base         *operatorsv1alpha1.ClusterServiceVersion
	crds         []*unstructured.Unstructured
	deployments  []*appsv1.Deployment
	roles        []*rbacv1.Role
	clusterRoles []*rbacv1.ClusterRole
	bindings     []*rbacv1.RoleBinding
	clusterBinds []*rbacv1.ClusterRoleBinding
	samples      []*unstructured.Unstructured
}

// classify sorts objects by kind. A kind a registry+v1 bundle cannot carry is an error, so nothing in
// config/ is silently left out of the bundle.
func classify(objs []*unstructured.Unstructured) (*parts, error) {
	p := &parts{}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		var err error
		switch {
		case gvk.Kind == "ClusterServiceVersion":
			if p.base != nil {
				return nil, fmt.Errorf("config/manifests renders two ClusterServiceVersions (%s and %s); keep one base CSV", p.base.Name, u.GetName())
			}
			p.base = &operatorsv1alpha1.ClusterServiceVersion{}
			err = convert(u, p.base)
		case gvk.Kind == "CustomResourceDefinition":
			p.crds = append(p.crds, u)
		case gvk.Kind == "Deployment":
			err = appendAs(u, &p.deployments)
		case gvk.Kind == "Role":
			err = appendAs(u, &p.roles)
		case gvk.Kind == "ClusterRole":
			err = appendAs(u, &p.clusterRoles)
		case gvk.Kind == "RoleBinding":
			err = appendAs(u, &p.bindings)
		case gvk.Kind == "ClusterRoleBinding":
			err = appendAs(u, &p.clusterBinds)
		case gvk.Group == etcdv1.GroupVersion.Group:
			p.samples = append(p.samples, u)
		case gvk.Kind == "Namespace" || gvk.Kind == "ServiceAccount":
			// OLM installs into the OperatorGroup's namespace and creates service accounts from the CSV.
		default:
			return nil, fmt.Errorf("config/manifests renders a %s (%s), which this bundle generator does not place; "+
				"remove it from config/ or teach operator/internal/olm/bundle where it goes", gvk.Kind, u.GetName())
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
		}
	}
	switch {
	case p.base == nil:
		return nil, fmt.Errorf("config/manifests renders no ClusterServiceVersion; add bases/etcd-operator.clusterserviceversion.yaml to its kustomization")
	case len(p.deployments) == 0:
		return nil, fmt.Errorf("config/manifests renders no Deployment; it must include ../default")
	case len(p.crds) == 0:
		return nil, fmt.Errorf("config/manifests renders no CustomResourceDefinition; it must include ../default")
	}
	return p, nil
}

func convert(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

func appendAs[T any](u *unstructured.Unstructured, list *[]*T) error {
	v := new(T)
	if err := convert(u, v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

// permissions turns the roles bound to the operator's service accounts into CSV permissions, and returns
// the roles nobody binds (such as the aggregated editor and viewer roles), which ship as plain manifests.
func (p *parts) permissions() (ns, cluster []operatorsv1alpha1.StrategyDeploymentPermissions, unboundRoles []*rbacv1.Role, unboundClusterRoles []*rbacv1.ClusterRole, err error) {
	accounts := map[string]bool{}
	for _, d := range p.deployments {
		accounts[d.Spec.Template.Spec.ServiceAccountName] = true
	}
	bound := map[string]bool{}
	for _, b := range p.bindings {
		sa, err := boundAccount(b.Name, b.Subjects, accounts)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		i := slices.IndexFunc(p.roles, func(r *rbacv1.Role) bool { return r.Name == b.RoleRef.Name })
		if b.RoleRef.Kind != "Role" || i < 0 {
			return nil, nil, nil, nil, fmt.Errorf("RoleBinding %s refers to %s %s, which config/ does not define", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
		ns = append(ns, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: p.roles[i].Rules})
		bound["Role/"+b.RoleRef.Name] = true
	}
	for _, b := range p.clusterBinds {
		sa, err := boundAccount(b.Name, b.Subjects, accounts)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		i := slices.IndexFunc(p.clusterRoles, func(r *rbacv1.ClusterRole) bool { return r.Name == b.RoleRef.Name })
		if i < 0 {
			return nil, nil, nil, nil, fmt.Errorf("ClusterRoleBinding %s refers to ClusterRole %s, which config/ does not define", b.Name, b.RoleRef.Name)
		}
		cluster = append(cluster, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: p.clusterRoles[i].Rules})
		bound["ClusterRole/"+b.RoleRef.Name] = true
	}
	for _, r := range p.roles {
		if !bound["Role/"+r.Name] {
			unboundRoles = append(unboundRoles, r)
		}
	}
	for _, r := range p.clusterRoles {
		if !bound["ClusterRole/"+r.Name] {
			unboundClusterRoles = append(unboundClusterRoles, r)
		}
	}
	return ns, cluster, unboundRoles, unboundClusterRoles, nil
}

// boundAccount returns the single operator service account a binding grants to.
func boundAccount(binding string, subjects []rbacv1.Subject, accounts map[string]bool) (string, error) {
	if len(subjects) != 1 || subjects[0].Kind != "ServiceAccount" || !accounts[subjects[0].Name] {
		return "", fmt.Errorf("binding %s must grant to exactly one service account of the operator's Deployment; OLM only creates those", binding)
	}
	return subjects[0].Name, nil
}
