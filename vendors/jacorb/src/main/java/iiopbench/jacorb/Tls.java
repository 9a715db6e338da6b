package iiopbench.jacorb;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The TLS options of the JacORB bench server and client
 * (docs/vendor-protocol.md, "TLS"): {@code --tls-cert FILE --tls-key FILE
 * --tls-ca FILE [--tls-require-client]}, PEM files, turned into what
 * JacORB's JSSE transport reads -- a PKCS#12 keystore (our key and chain,
 * and the CA as a trusted entry; written to a private temporary file
 * removed at exit) and the jacorb.security.* properties.
 */
final class Tls {
  /** The temporary keystores written so far (see {@link #removeKeystores}). */
  private static final List<Path> KEYSTORES = Collections.synchronizedList(new ArrayList<>());

  /**
   * Remove the temporary keystores now: a process that ends by
   * Runtime.halt (the server on SIGTERM) runs no deleteOnExit.
   */
  static void removeKeystores() {
    synchronized (KEYSTORES) {
      for (Path f : KEYSTORES) {
        try {
          Files.deleteIfExists(f);
        } catch (IOException e) {
          // nothing more to do at exit
        }
      }
      KEYSTORES.clear();
    }
  }

  String cert;
  String key;
  String ca;
  boolean requireClient;

  /** Consumes args[i] (and its value) when it is a TLS option; the new index, or -1. */
  int parse(String[] args, int i) {
    String a = args[i];
    if (a.equals("--tls-require-client")) {
      requireClient = true;
      return i;
    }
    if (!a.equals("--tls-cert") && !a.equals("--tls-key") && !a.equals("--tls-ca")) {
      return -1;
    }
    if (i + 1 >= args.length) {
      throw new IllegalArgumentException(a + " needs a file");
    }
    String v = args[i + 1];
    switch (a) {
      case "--tls-cert": cert = v; break;
      case "--tls-key": key = v; break;
      default: ca = v;
    }
    return i + 1;
  }

  boolean on() {
    return cert != null || key != null || ca != null;
  }

  /** Why the options cannot be used, or null. */
  String incomplete() {
    if (on() && (cert == null || key == null || ca == null)) {
      return "TLS needs --tls-cert, --tls-key and --tls-ca together";
    }
    return null;
  }

  /**
   * The JacORB properties for TLS: a server listening for TLS only on
   * {@code sslPort} (its IOR then carries TAG_SSL_SEC_TRANS), or a client
   * that goes over TLS wherever an IOR offers it. Association options are
   * hex (Security::AssociationOptions): 0x06 Integrity|Confidentiality,
   * 0x20 EstablishTrustInTarget, 0x40 EstablishTrustInClient.
   */
  void addProperties(Map<String, String> p, boolean server, int sslPort) throws Exception {
    String password = "iiopbench";
    Path ks = keystore(password);
    p.put("jacorb.security.support_ssl", "on");
    p.put("jacorb.ssl.socket_factory", "org.jacorb.security.ssl.sun_jsse.SSLSocketFactory");
    p.put("jacorb.ssl.server_socket_factory",
        "org.jacorb.security.ssl.sun_jsse.SSLServerSocketFactory");
    p.put("jacorb.security.keystore", ks.toString());
    p.put("jacorb.security.keystore_password", password);
    p.put("jacorb.security.jsse.trustees_from_ks", "on");
    if (server) {
      p.put("OASSLPort", Integer.toString(sslPort));
      p.put("jacorb.security.ssl.server.supported_options", requireClient ? "66" : "26");
      p.put("jacorb.security.ssl.server.required_options", requireClient ? "46" : "6");
    } else {
      p.put("jacorb.security.ssl.client.supported_options", "66");
      p.put("jacorb.security.ssl.client.required_options", "0");
    }
  }

  private Path keystore(String password) throws Exception {
    CertificateFactory cf = CertificateFactory.getInstance("X.509");
    Collection<? extends Certificate> chain;
    try (InputStream in = new FileInputStream(cert)) {
      chain = cf.generateCertificates(in);
    }
    Certificate caCert;
    try (InputStream in = new FileInputStream(ca)) {
      caCert = cf.generateCertificate(in);
    }
    KeyStore ks = KeyStore.getInstance("PKCS12");
    ks.load(null, null);
    ks.setKeyEntry("iiopbench", privateKey(key), password.toCharArray(),
        chain.toArray(new Certificate[0]));
    ks.setCertificateEntry("ca", caCert);
    Path f = Files.createTempFile("iiopbench-jacorb-tls-", ".p12");
    f.toFile().deleteOnExit();
    KEYSTORES.add(f);
    try (FileOutputStream out = new FileOutputStream(f.toFile())) {
      ks.store(out, password.toCharArray());
    }
    return f;
  }

  /** A PKCS#8 PEM private key (EC or RSA). */
  private static PrivateKey privateKey(String file) throws IOException {
    String pem = Files.readString(Path.of(file), StandardCharsets.US_ASCII);
    int b = pem.indexOf("-----BEGIN PRIVATE KEY-----");
    int e = pem.indexOf("-----END PRIVATE KEY-----");
    if (b < 0 || e < b) {
      throw new IOException(file + ": no PKCS#8 PRIVATE KEY block");
    }
    String body = pem.substring(b + "-----BEGIN PRIVATE KEY-----".length(), e).replaceAll("\\s", "");
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getDecoder().decode(body));
    for (String alg : new String[] {"EC", "RSA"}) {
      try {
        return KeyFactory.getInstance(alg).generatePrivate(spec);
      } catch (Exception ignored) {
        // try the next algorithm
      }
    }
    throw new IOException(file + ": neither an EC nor an RSA PKCS#8 key");
  }
}
