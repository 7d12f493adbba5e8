package commands

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"strings"
	"time"

	"agt/state"
)

// selfSignedAge is how long a certificate agt makes is valid; an expired one is made again
// (with a new fingerprint).
const selfSignedAge = 365 * 24 * time.Hour

// servePair returns the TLS certificate to serve: the user's pair when certFile is given, else
// the one agt made before in the run directory, else a new one (ECDSA P-256, self-signed, for
// this host's names and addresses, stored 0600). made says a new one was made.
func servePair(d *state.Dir, certFile, keyFile string) (cert tls.Certificate, made bool, err error) {
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return cert, false, errors.New("--tls-cert and --tls-key go together: give both files of the pair")
		}
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return cert, false, fmt.Errorf("load the TLS pair %s, %s: %w", certFile, keyFile, err)
		}
		return cert, false, nil
	}
	certPath, err := d.ServePath(state.ServeCert)
	if err != nil {
		return cert, false, err
	}
	keyPath, err := d.ServePath(state.ServeKey)
	if err != nil {
		return cert, false, err
	}
	certPEM, err1 := state.ReadSmall(certPath)
	keyPEM, err2 := state.ReadSmall(keyPath)
	if err1 == nil && err2 == nil {
		cert, err = tls.X509KeyPair(certPEM, keyPEM)
		if err == nil && time.Now().Add(24*time.Hour).Before(cert.Leaf.NotAfter) {
			return cert, false, nil
		}
	}
	for _, err := range []error{err1, err2} {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return cert, false, fmt.Errorf("read the TLS pair agt made: %w", err)
		}
	}
	certPEM, keyPEM, err = selfSigned(time.Now())
	if err != nil {
		return cert, false, err
	}
	// The key first: a certificate without its key is of no use, and the pair is read whole.
	if err := state.WriteFileAtomic(keyPath, keyPEM); err != nil {
		return cert, false, err
	}
	if err := state.WriteFileAtomic(certPath, certPEM); err != nil {
		return cert, false, err
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	return cert, true, err
}

// selfSigned makes a self-signed ECDSA certificate for this host: its name, localhost, and
// every address of its interfaces.
func selfSigned(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "agt serve on " + host},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedAge),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
	}
	if host != "" && host != "localhost" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				tmpl.IPAddresses = append(tmpl.IPAddresses, n.IP)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// fingerprint is the SHA-256 of a certificate, as browsers and openssl show it: AB:CD:….
func fingerprint(cert *tls.Certificate) string {
	if len(cert.Certificate) == 0 {
		return ""
	}
	sum := sha256.Sum256(cert.Certificate[0])
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}
