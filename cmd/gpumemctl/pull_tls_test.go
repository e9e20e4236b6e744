package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a site CA as docs/install.md has the admin make one.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return testCA{cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for dns names (a node's, or a client's), as PEM cert and key.
func (ca testCA) issue(t *testing.T, usage x509.ExtKeyUsage, dns ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: dns[0]},
		DNSNames: dns, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func (ca testCA) serverCert(t *testing.T, dns ...string) *tls.Certificate {
	c, k := ca.issue(t, x509.ExtKeyUsageServerAuth, dns...)
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return &cert
}

// Over TLS a node's answer is taken only from a certificate the site's CA signed for
// that node's name: a certificate of another node (a user who copied n1's to n2), or one
// a user made for n2 themselves, is refused, and nothing the controller reads changes.
// The certificate names the node even though the URL reaches it by address; a gpumemd
// that asks for a client certificate gets the controller's.
func TestInventoryPullOverTLS(t *testing.T) {
	l := newPullLab(t)
	ca, rogue := newTestCA(t, "site CA"), newTestCA(t, "a user's CA")
	caFile := filepath.Join(l.dir, "ca.pem")
	os.WriteFile(caFile, ca.pem, 0o644)
	clientCert, clientKey := ca.issue(t, x509.ExtKeyUsageClientAuth, "controller")
	certFile, keyFile := filepath.Join(l.dir, "pull.crt"), filepath.Join(l.dir, "pull.key")
	os.WriteFile(certFile, clientCert, 0o644)
	os.WriteFile(keyFile, clientKey, 0o600)
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(ca.cert)

	var n2Cert atomic.Pointer[tls.Certificate]
	var n2Body atomic.Pointer[[]byte]
	n2Cert.Store(ca.serverCert(t, "n2"))
	n2Body.Store(&[]byte{})
	*n2Body.Load() = l.good["n2"]
	serveTLS := func(body func() []byte, cert func() *tls.Certificate, askClient bool) string {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body()) }))
		srv.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert(), nil }}
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
		if askClient {
			srv.TLS.ClientAuth, srv.TLS.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
		}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "https://")
	}
	n1Cert := ca.serverCert(t, "n1")
	addrs := map[string]string{
		"n1": serveTLS(func() []byte { return l.good["n1"] }, func() *tls.Certificate { return n1Cert }, true),
		"n2": serveTLS(func() []byte { return *n2Body.Load() }, n2Cert.Load, false),
	}
	l.template(addrs)
	tlsArgs := []string{"--ca-file", caFile, "--cert-file", certFile, "--key-file", keyFile}
	out, err := l.pull(t, "https://{addr}/inventory", tlsArgs...)
	if err != nil {
		t.Fatalf("pull over TLS: %v\n%s", err, out)
	}
	if strings.Contains(out, "plain HTTP") {
		t.Errorf("a TLS pull warned of plain HTTP:\n%s", out)
	}
	want := l.files(t)

	hostile := append([]byte(nil), l.good["n2"]...)
	hostile = []byte(strings.Replace(string(hostile), `"type": "h100"`, `"type": "h100\nPartitionName=evil Nodes=ALL"`, 1))
	for _, c := range []struct {
		name, want string
		cert       *tls.Certificate
		body       []byte
		args       []string
	}{
		{"n1's certificate on n2", "certificate is valid for n1, not n2", n1Cert, l.good["n2"], tlsArgs},
		{"a user's own certificate for n2", "certificate signed by unknown authority", rogue.serverCert(t, "n2"), l.good["n2"], tlsArgs},
		{"a hostile answer with a good certificate", "type", ca.serverCert(t, "n2"), hostile, tlsArgs},
		{"no client certificate for n1", "node n1 (", ca.serverCert(t, "n2"), l.good["n2"], []string{"--ca-file", caFile}},
	} {
		n2Cert.Store(c.cert)
		n2Body.Store(&c.body)
		l.restore(t, want)
		out, err := l.pull(t, "https://{addr}/inventory", c.args...)
		var st exitStatus
		if !errors.As(err, &st) || st.code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %v; want 1 with a warning saying %q\n%s", c.name, err, c.want, out)
		}
		same(t, c.name, l.files(t), want)
	}

	// TLS settings that would check nothing are refused before anything is asked.
	for _, c := range []struct {
		url  string
		args []string
		want string
	}{
		{"http://{addr}/inventory", []string{"--ca-file", caFile}, "must be https://"},
		{"https://{addr}/inventory", nil, "give --ca-file"},
		{"https://{addr}/inventory", []string{"--ca-file", certFile + ".none"}, "--ca-file"},
		{"https://{addr}/inventory", []string{"--ca-file", keyFile}, "no PEM certificate"},
		{"https://{addr}/inventory", []string{"--ca-file", caFile, "--cert-file", certFile}, "go together"},
		{"http://{addr}/inventory", []string{"--cert-file", certFile, "--key-file", keyFile}, "give --ca-file too"},
	} {
		_, err := l.pull(t, c.url, c.args...)
		var st exitStatus
		if !errors.As(err, &st) || st.code != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v; want exit 2 saying %q", c.url, c.args, err, c.want)
		}
	}
}
