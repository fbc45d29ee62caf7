package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Names of the files the PKI writes into the cluster's pki directory. The flags of every component refer to
// them, so they are constants rather than fields.
const (
	caCert          = "ca.crt"
	caKey           = "ca.key"
	frontProxyCA    = "front-proxy-ca.crt"
	apiserverCert   = "apiserver.crt"
	apiserverKey    = "apiserver.key"
	proxyClientCert = "front-proxy-client.crt"
	proxyClientKey  = "front-proxy-client.key"
	saKey           = "sa.key"
	saPub           = "sa.pub"
	tokenFile       = "tokens.csv"
)

// clientIdentities are the components that authenticate with a client certificate: the file names of their
// certificate, key and kubeconfig, and the user name the certificate carries. The first three match
// bootstrap RBAC bindings (system:kube-controller-manager, system:kube-scheduler, and system:node-proxier
// for system:kube-proxy), so they get exactly their usual rights; CoreDNS's rights come from coreDNSRBAC.
var clientIdentities = []struct{ file, user string }{
	{"kube-controller-manager", "system:kube-controller-manager"},
	{"kube-scheduler", "system:kube-scheduler"},
	{"kube-proxy", "system:kube-proxy"},
	{"coredns", coreDNSUser},
}

// certAuthority is a CA whose key stays in memory to sign leaf certificates.
type certAuthority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// writePKI creates every key and certificate the control plane needs under dir, plus the static token file
// that authenticates the admin (in system:masters). ECDSA P-256 keeps generation to milliseconds, where
// RSA 2048 would cost a noticeable share of the start-up time. It returns the cluster CA's PEM bytes,
// which clients use to verify the apiserver.
func writePKI(dir string, apiserverIPs []net.IP, adminToken string) ([]byte, error) {
	ca, err := newCA(dir, "localcluster-ca", caCert, caKey)
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + ClusterDomain, "localhost"},
		IPAddresses: apiserverIPs,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if err := ca.issue(dir, apiserverCert, apiserverKey, serving); err != nil {
		return nil, err
	}
	for _, id := range clientIdentities {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: id.user},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := ca.issue(dir, id.file+".crt", id.file+".key", tmpl); err != nil {
			return nil, err
		}
	}
	// A separate CA for the aggregation layer, as kubeadm does: a front-proxy client certificate must not
	// be accepted as an ordinary client certificate.
	fp, err := newCA(dir, "localcluster-front-proxy-ca", frontProxyCA, "")
	if err != nil {
		return nil, err
	}
	proxy := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "front-proxy-client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := fp.issue(dir, proxyClientCert, proxyClientKey, proxy); err != nil {
		return nil, err
	}
	if err := writeServiceAccountKey(dir); err != nil {
		return nil, err
	}
	tokens := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n", adminToken)
	if err := os.WriteFile(filepath.Join(dir, tokenFile), []byte(tokens), 0o600); err != nil {
		return nil, fmt.Errorf("write token file: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), nil
}

// newCA creates a self-signed CA and writes its certificate (and its key, when keyName is not empty).
func newCA(dir, name, certName, keyName string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key for %s: %w", name, err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	cert, err := sign(tmpl, tmpl, key, key)
	if err != nil {
		return nil, fmt.Errorf("self-sign %s: %w", name, err)
	}
	if err := writeCert(dir, certName, cert); err != nil {
		return nil, err
	}
	if keyName != "" {
		if err := writeKey(dir, keyName, key); err != nil {
			return nil, err
		}
	}
	return &certAuthority{cert: cert, key: key}, nil
}

// issue signs a new key pair for tmpl with the CA and writes both files.
func (ca *certAuthority) issue(dir, certName, keyName string, tmpl *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate key for %s: %w", certName, err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	cert, err := sign(tmpl, ca.cert, key, ca.key)
	if err != nil {
		return fmt.Errorf("sign %s: %w", certName, err)
	}
	if err := writeCert(dir, certName, cert); err != nil {
		return err
	}
	return writeKey(dir, keyName, key)
}

func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, parentKey crypto.Signer) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	// Back-date a little so a clock read a moment later by another process never sees "not yet valid".
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(365 * 24 * time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// writeServiceAccountKey writes the key pair the apiserver signs service-account tokens with (and the
// controller-manager's token controller too).
func writeServiceAccountKey(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate service-account key: %w", err)
	}
	if err := writeKey(dir, saKey, key); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("marshal service-account public key: %w", err)
	}
	return writePEM(dir, saPub, "PUBLIC KEY", pub)
}

func writeCert(dir, name string, cert *x509.Certificate) error {
	return writePEM(dir, name, "CERTIFICATE", cert.Raw)
}

func writeKey(dir, name string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key %s: %w", name, err)
	}
	return writePEM(dir, name, "PRIVATE KEY", der)
}

func writePEM(dir, name, typ string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
