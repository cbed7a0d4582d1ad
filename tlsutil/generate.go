package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Validity of what GenerateCA and GenerateCert make.
const (
	CAValidity   = 5 * 365 * 24 * time.Hour
	CertValidity = 365 * 24 * time.Hour
	// clockSkew backdates NotBefore, so that a host whose clock is a little
	// behind accepts a certificate made now.
	clockSkew = time.Minute
)

// CA is a certificate authority: its certificate and key, parsed and as PEM.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// GenerateCA makes a new CA: an ECDSA P-256 key and a self-signed
// certificate valid for CAValidity.
func GenerateCA() (*CA, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("Berth Agent CA %08x", serial.Uint64()&0xffffffff), Organization: []string{"berth"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("tls: sign CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tls: parse CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// ParseCA reads a CA's PEM certificate and key (as GenerateCA writes them,
// or a PKCS #8 key) and checks that they belong together.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("tls: the CA certificate is not a PEM CERTIFICATE")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("tls: parse CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("tls: the CA certificate is not a CA's (it cannot sign certificates)")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("tls: the CA key is not PEM")
	}
	var key crypto.Signer
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	case "PRIVATE KEY":
		var k any
		if k, err = x509.ParsePKCS8PrivateKey(kb.Bytes); err == nil {
			var ok bool
			if key, ok = k.(crypto.Signer); !ok {
				err = fmt.Errorf("a %T cannot sign", k)
			}
		}
	default:
		err = fmt.Errorf("PEM block %q is not a private key", kb.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("tls: parse CA key: %w", err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, errors.New("tls: the CA key does not match the CA certificate")
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// GenerateCert makes an ECDSA P-256 key and a certificate for role signed
// by ca, valid for CertValidity (or until the CA expires, if sooner).
// Servers' certificates name server.global.berth, localhost and 127.0.0.1;
// clients' client.global.berth, localhost and 127.0.0.1; the CLI's
// cli.global.berth. extraDNS and extraIPs are added to them; extraDNS may
// not hold another role's name.
func GenerateCert(role Role, ca *CA, extraDNS []string, extraIPs []net.IP) (certPEM, keyPEM []byte, err error) {
	if ca == nil {
		return nil, nil, errors.New("tls: no CA to sign the certificate")
	}
	var (
		dns   []string
		ips   []net.IP
		usage []x509.ExtKeyUsage
	)
	loopback := net.IPv4(127, 0, 0, 1)
	switch role {
	case RoleServer:
		dns, ips = []string{ServerName, "localhost"}, []net.IP{loopback}
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	case RoleClient:
		// ServerAuth: a client agent serves its HTTPS API with it. It never
		// makes it a server to berth: a server is server.global.berth.
		dns, ips = []string{ClientName, "localhost"}, []net.IP{loopback}
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	case RoleCLI:
		dns = []string{CLIName}
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		return nil, nil, fmt.Errorf("tls: no certificate role %q; use server, client or cli", role)
	}
	for _, n := range extraDNS {
		if other := roleOfName(n); other != RoleNone && other != role {
			return nil, nil, fmt.Errorf("tls: a %s certificate cannot also name %s, a %s's name: it would speak for both", role, n, other)
		}
	}
	dns = append(dns, extraDNS...)
	ips = append(ips, extraIPs...)

	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	notAfter := now.Add(CertValidity)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: dns[0], Organization: []string{"berth"}},
		DNSNames:              dns,
		IPAddresses:           ips,
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           usage,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: sign %s certificate: %w", role, err)
	}
	return pemBlock("CERTIFICATE", der), keyPEM, nil
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: generate key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: encode key: %w", err)
	}
	return key, pemBlock("EC PRIVATE KEY", der), nil
}

// newSerial is a random 128-bit serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("tls: make serial number: %w", err)
	}
	return n, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
