#!/usr/bin/env node
// Real Sigstore peers for imageguard's signature tests, from the npm packages pinned in
// package.json (install: npm ci in this folder). Subcommands:
//
//   sign    --mode key|keyless --format message|dsse --digest sha256:HEX [--artifact FILE]
//           --out BUNDLE --trust DIR --keys DIR [--issuer URL] [--subject SAN] [--ctlog]
//           [--ca-clock-offset SECONDS] [--entry-type dsse|intoto]
//     Signs the image digest with @sigstore/sign: key-based through a small custom signer over
//     a local P-256 key (KEYS/signer.key), keyless through @sigstore/mock's Fulcio and Rekor
//     served on a loopback HTTP server built from the mock's exported handlers. Every key
//     (signer, CA, Rekor, CT log) lives in KEYS (created once, reused); the public trust
//     material is written into DIR with the key names imageguard reads (cosign.pub,
//     fulcio.crt.pem, rekor.pub, ctfe.pub). A message signature signs the artifact (the image
//     manifest, whose SHA-256 is the digest); a DSSE bundle an in-toto statement about it.
//   attach  --image HOST:PORT/REPO --digest sha256:HEX --bundle FILE
//     Attaches the bundle with @sigstore/oci's attachArtifactToImage (docker-registry 2.8 has
//     no referrers API: the sha256-<hex> tag fallback index is written).
//   verify  --bundle FILE --trust DIR --digest sha256:HEX [--artifact FILE] [--issuer RE]
//           [--subject RE]
//     The reference verifier, @sigstore/verify, over the same trust folder. The identity rules
//     are matched as imageguard matches them (unanchored, as Go's regexp.MatchString) against
//     the identity @sigstore/verify reports; a DSSE statement must name the digest. Exit 0
//     accepted, 1 refused (the reason on stdout), 2 usage.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const path = require('path');

const mock = require('@sigstore/mock');
const sign = require('@sigstore/sign');
const oci = require('@sigstore/oci');
const verify = require('@sigstore/verify');
const bundleLib = require('@sigstore/bundle');
const core = require('@sigstore/core');
const specs = require('@sigstore/protobuf-specs');

const INTOTO = 'application/vnd.in-toto+json';

function parseArgs(argv) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) {
      out._.push(a);
    } else if (a === '--ctlog') {
      out.ctlog = true;
    } else {
      out[a.slice(2).replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = argv[++i];
    }
  }
  return out;
}

// A P-256 key kept in dir/name (PKCS#8 PEM), made on first use.
function keyPair(dir, name) {
  const file = path.join(dir, name);
  if (!fs.existsSync(file)) {
    const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  }
  const privateKey = crypto.createPrivateKey(fs.readFileSync(file));
  return { privateKey, publicKey: crypto.createPublicKey(privateKey) };
}

function publicPem(key) {
  return key.publicKey.export({ format: 'pem', type: 'spki' }).toString();
}

function derToPem(der) {
  const b64 = Buffer.from(der).toString('base64').match(/.{1,64}/g).join('\n');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

// A loopback HTTP server answering the mock's handlers ({path, fn(body)}).
function serve(handlers) {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const h = handlers.find((x) => req.method === 'POST' && req.url === x.path);
      if (!h) {
        res.writeHead(404).end();
        return;
      }
      const r = await h.fn(Buffer.concat(chunks).toString());
      res.writeHead(r.statusCode, { 'Content-Type': r.contentType || 'text/plain' });
      res.end(r.response);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

function unsignedJWT(claims) {
  const part = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

// The custom key-based signer: ECDSA P-256 over SHA-256, DER, with the key's SHA-256 as hint.
function keySigner(key) {
  const pem = publicPem(key);
  const hint = crypto
    .createHash('sha256')
    .update(key.publicKey.export({ format: 'der', type: 'spki' }))
    .digest('hex');
  return {
    sign: async (data) => ({
      signature: crypto.sign('sha256', data, key.privateKey),
      key: { $case: 'publicKey', publicKey: pem, hint },
    }),
  };
}

function statement(digest) {
  const [algo, hex] = digest.split(':');
  return Buffer.from(
    JSON.stringify({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'image', digest: { [algo]: hex } }],
      predicateType: 'https://sigstore.dev/cosign/sign/v1',
      predicate: {},
    })
  );
}

async function startPeers(a, trust) {
  const rekorKey = keyPair(a.keys, 'rekor.key');
  const handlers = [];
  const server = await serve(handlers);
  const url = `http://127.0.0.1:${server.address().port}`;
  handlers.push(mock.rekorHandler(await mock.initializeTLog(url, rekorKey)));
  fs.writeFileSync(path.join(trust, 'rekor.pub'), publicPem(rekorKey));
  if (a.mode === 'keyless') {
    let ctLog;
    if (a.ctlog) {
      const ctKey = keyPair(a.keys, 'ctlog.key');
      ctLog = await mock.initializeCTLog(ctKey);
      fs.writeFileSync(path.join(trust, 'ctfe.pub'), publicPem(ctKey));
    }
    const offset = Number(a.caClockOffset || 0);
    const clock = offset ? new Date(Date.now() + offset * 1000) : undefined;
    const ca = await mock.initializeCA(keyPair(a.keys, 'ca.key'), ctLog, clock);
    handlers.push(mock.fulcioHandler(ca));
    fs.writeFileSync(path.join(trust, 'fulcio.crt.pem'), derToPem(ca.rootCertificate));
  }
  return { server, url };
}

async function cmdSign(a) {
  fs.mkdirSync(a.trust, { recursive: true });
  const { server, url } = await startPeers(a, a.trust);
  try {
    let signer;
    if (a.mode === 'keyless') {
      const token = unsignedJWT({
        iss: a.issuer || 'https://issuer.example',
        sub: a.subject || 'https://github.com/example/app/.github/workflows/release.yml@refs/heads/main',
        aud: 'sigstore',
        exp: Math.floor(Date.now() / 1000) + 600,
      });
      signer = new sign.FulcioSigner({
        fulcioBaseURL: url,
        identityProvider: { getToken: async () => token },
      });
    } else {
      const key = keyPair(a.keys, 'signer.key');
      fs.writeFileSync(path.join(a.trust, 'cosign.pub'), publicPem(key));
      signer = keySigner(key);
    }
    const witnesses = [new sign.RekorWitness({ rekorBaseURL: url, entryType: a.entryType })];
    let bundle;
    if (a.format === 'dsse') {
      const b = new sign.DSSEBundleBuilder({ signer, witnesses });
      bundle = await b.create({ data: statement(a.digest), type: INTOTO });
    } else {
      const b = new sign.MessageSignatureBundleBuilder({ signer, witnesses });
      bundle = await b.create({ data: fs.readFileSync(a.artifact) });
    }
    fs.writeFileSync(a.out, JSON.stringify(bundleLib.bundleToJSON(bundle)));
  } finally {
    server.close();
  }
}

async function cmdAttach(a) {
  const bundle = fs.readFileSync(a.bundle);
  const mediaType = JSON.parse(bundle).mediaType;
  const d = await oci.attachArtifactToImage({
    imageName: a.image,
    imageDigest: a.digest,
    artifact: bundle,
    mediaType,
    credentials: null,
  });
  process.stdout.write(`${d.digest}\n`);
}

// The trust folder as @sigstore/verify's trust material, read by the same key names.
function trustMaterial(dir) {
  const names = fs.readdirSync(dir).filter((n) => !n.startsWith('.')).sort();
  if (names.includes('trusted_root.json')) {
    const root = specs.TrustedRoot.fromJSON(
      JSON.parse(fs.readFileSync(path.join(dir, 'trusted_root.json')))
    );
    return verify.toTrustMaterial(root, () => {
      throw new Error('no public keys');
    });
  }
  const open = { start: new Date(0), end: new Date(8640000000000000) };
  const log = (n) => {
    const publicKey = crypto.createPublicKey(fs.readFileSync(path.join(dir, n)));
    const der = publicKey.export({ format: 'der', type: 'spki' });
    return { logID: crypto.createHash('sha256').update(der).digest(), publicKey, validFor: open };
  };
  const certs = names
    .filter((n) => n.startsWith('fulcio') && n.endsWith('.crt.pem'))
    .flatMap((n) => fs.readFileSync(path.join(dir, n), 'utf8').match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) || [])
    .map((pem) => core.X509Certificate.parse(pem));
  const signers = names.filter(
    (n) => n.endsWith('.pub') && !/^(rekor|ctfe|ctlog)/.test(n)
  );
  return {
    certificateAuthorities: certs.length ? [{ certChain: certs, validFor: open }] : [],
    timestampAuthorities: [],
    tlogs: names.filter((n) => n.startsWith('rekor') && n.endsWith('.pub')).map(log),
    ctlogs: names.filter((n) => /^(ctfe|ctlog).*\.pub$/.test(n)).map(log),
    publicKey: () => {
      if (signers.length !== 1) throw new Error('want exactly one signer key');
      const publicKey = crypto.createPublicKey(fs.readFileSync(path.join(dir, signers[0])));
      return { publicKey, validFor: () => true };
    },
  };
}

function checkStatement(bundle, digest) {
  const env = bundle.dsseEnvelope;
  if (!env) return;
  if (env.payloadType !== INTOTO) throw new Error('payload type is not in-toto');
  const st = JSON.parse(Buffer.from(env.payload, 'base64'));
  const [algo, hex] = digest.split(':');
  if (!(st.subject || []).some((s) => s.digest && s.digest[algo] === hex)) {
    throw new Error('statement has no subject with this digest');
  }
}

function checkIdentity(signer, a) {
  if (!a.issuer && !a.subject) return;
  const id = signer.identity;
  if (!id) throw new Error('signed by a key, identity rules given');
  if (a.issuer && !new RegExp(a.issuer).test((id.extensions || {}).issuer || '')) {
    throw new Error(`issuer ${(id.extensions || {}).issuer} does not match`);
  }
  if (a.subject && !new RegExp(a.subject).test(id.subjectAlternativeName || '')) {
    throw new Error(`subject ${id.subjectAlternativeName} does not match`);
  }
}

function cmdVerify(a) {
  const json = JSON.parse(fs.readFileSync(a.bundle));
  const bundle = bundleLib.bundleFromJSON(json);
  const artifact = a.artifact ? fs.readFileSync(a.artifact) : undefined;
  const tm = trustMaterial(a.trust);
  const v = new verify.Verifier(tm, {
    tlogThreshold: 1,
    ctlogThreshold: tm.ctlogs.length && bundle.verificationMaterial.content.$case !== 'publicKey' ? 1 : 0,
  });
  const signer = v.verify(verify.toSignedEntity(bundle, artifact));
  checkStatement(json, a.digest);
  if (!json.dsseEnvelope) {
    const md = Buffer.from(json.messageSignature.messageDigest.digest, 'base64').toString('hex');
    if (`sha256:${md}` !== a.digest) throw new Error('message digest is not this digest');
  }
  checkIdentity(signer, a);
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const cmd = a._[0];
  try {
    if (cmd === 'sign') await cmdSign(a);
    else if (cmd === 'attach') await cmdAttach(a);
    else if (cmd === 'verify') {
      cmdVerify(a);
      process.stdout.write('ok\n');
    } else {
      process.stderr.write('usage: sigstore.js sign|attach|verify ...\n');
      process.exit(2);
    }
  } catch (e) {
    if (cmd === 'verify') {
      process.stdout.write(`refused: ${e.code || ''} ${e.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`sigstore.js ${cmd}: ${e.stack || e}\n`);
    process.exit(2);
  }
}

main();
