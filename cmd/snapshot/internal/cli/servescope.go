package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// clusterScoped are the built-in resources whose objects have no
// namespace, for telling the scope of a resource the file holds no object
// of.
var clusterScoped = map[schema.GroupResource]bool{
	{Resource: "nodes"}: true, {Resource: "namespaces"}: true, {Resource: "persistentvolumes"}: true,
	{Resource: "componentstatuses"}:                                                        true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}:                 true,
	{Group: "apiregistration.k8s.io", Resource: "apiservices"}:                             true,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}:                         true,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}:                  true,
	{Group: "storage.k8s.io", Resource: "storageclasses"}:                                  true,
	{Group: "storage.k8s.io", Resource: "csidrivers"}:                                      true,
	{Group: "storage.k8s.io", Resource: "csinodes"}:                                        true,
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:                               true,
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}:                              true,
	{Group: "node.k8s.io", Resource: "runtimeclasses"}:                                     true,
	{Group: "networking.k8s.io", Resource: "ingressclasses"}:                               true,
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}:                 true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:     true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}:   true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}:       true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}: true,
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"}:       true,
}

// namespaced tells whether the objects of a resource have a namespace:
// from its first object (its key, for a sealed resource), else from its
// CRD in the file, else from the built-in resources.
func (f *snapshotFile) namespaced(ctx context.Context, info inspect.ResourceInfo) bool {
	var first runtime.Object
	if isSealed(info) {
		if st, err := f.keyStore(ctx, info); err == nil {
			first, _ = firstKeyObject(ctx, st)
		} else if st, err := f.store(ctx, info, true); err == nil {
			first, _ = firstObject(ctx, st)
		}
	} else if st, err := f.store(ctx, info, true); err == nil {
		first, _ = firstObject(ctx, st)
	}
	if first != nil {
		return isNamespaced(first)
	}
	gr := schema.GroupResource{Group: info.Identity.Group, Resource: info.Identity.Resource}
	if def, ok := f.loadCRDs(ctx)[gr]; ok && def.scope != "" {
		return def.scope == "Namespaced"
	}
	return !clusterScoped[gr]
}

// objectFields are the fields a field selector may select of obj (see
// supportedFields).
func objectFields(obj runtime.Object) fields.Set {
	a, err := meta.Accessor(obj)
	if err != nil {
		return fields.Set{}
	}
	return fieldSet(obj, a)
}

// selfSignedCert returns a certificate for serving at ip (and at the host
// of address when it is a name, and at this machine's name when ip is
// unspecified), signed by itself, and its PEM for the kubeconfig to trust.
func selfSignedCert(ip net.IP, address string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "snapshot serve"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	host, _, _ := net.SplitHostPort(address)
	switch {
	case ip.IsUnspecified():
		if name, err := os.Hostname(); err == nil {
			tmpl.DNSNames = append(tmpl.DNSNames, name)
		}
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					tmpl.IPAddresses = append(tmpl.IPAddresses, n.IP)
				}
			}
		}
	case net.ParseIP(host) == nil && host != "":
		tmpl.DNSNames = append(tmpl.DNSNames, host)
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	default:
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certificate: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certificate key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("certificate: %w", err)
	}
	return cert, certPEM, nil
}
