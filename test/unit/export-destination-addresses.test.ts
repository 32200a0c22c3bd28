import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESTINATION_TIMEOUTS, DestinationError } from '#shared/exports/destination-http.ts';
import { putObject } from '#shared/exports/s3.ts';
import { addressProblem, endpointProblem } from '#shared/exports/destination-rules.ts';

/**
 * Where an export may connect: one rule (addressProblem), used by the API on a literal endpoint and by
 * the exporter's connection filter on every address it is about to connect to. Each refused range is
 * listed with addresses in it, each written several ways; the rule must name the range for every spelling.
 */

/** The ways one IPv4 address can be written in a URL host (WHATWG URL parsing turns each into a.b.c.d). */
function ipv4Spellings(dotted: string): string[] {
  const [a, b, c, d] = dotted.split('.').map(Number) as [number, number, number, number];
  const n = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
  return [
    dotted,
    String(n), // one decimal number
    `0x${n.toString(16)}`, // one hex number
    [a, b, c, d].map((x) => `0${x.toString(8)}`).join('.'), // octal parts
    [a, b, c, d].map((x) => `0x${x.toString(16)}`).join('.'), // hex parts
    `${a}.${b}.${(c << 8) + d}`, // a.b.c16
    `${a}.${(b << 16) + (c << 8) + d}`, // a.b24
  ];
}

/** The ways one IPv6 address can be written: compressed, fully expanded, upper case, and with an IPv4 tail. */
function ipv6Spellings(address: string): string[] {
  const words = expand(address);
  const full = words.map((w) => w.toString(16).padStart(4, '0')).join(':');
  const tail = `${words[6]! >> 8}.${words[6]! & 255}.${words[7]! >> 8}.${words[7]! & 255}`;
  const head = words
    .slice(0, 6)
    .map((w) => w.toString(16))
    .join(':');
  return [...new Set([address, full, full.toUpperCase(), `${head}:${tail}`, compress(words.slice(0, 6)) + tail])];
}

function expand(address: string): number[] {
  const [left, right] = address.split('::') as [string, string | undefined];
  const part = (s: string | undefined) => (s ? s.split(':').map((w) => Number.parseInt(w, 16)) : []);
  const l = part(left);
  const r = part(right);
  return right === undefined ? l : [...l, ...Array(8 - l.length - r.length).fill(0), ...r];
}

/** The first six words with the longest zero run as `::` (so `::ffff:1.2.3.4`, `64:ff9b::1.2.3.4`). */
function compress(six: number[]): string {
  const text = six.map((w) => w.toString(16));
  let best = { at: -1, length: 0 };
  for (let i = 0; i < 6; i++) {
    let j = i;
    while (j < 6 && six[j] === 0) j++;
    if (j - i > best.length) best = { at: i, length: j - i };
  }
  if (best.length === 0) return `${text.join(':')}:`;
  const before = text.slice(0, best.at).join(':');
  const after = text.slice(best.at + best.length).join(':');
  return `${before}::${after}${after ? ':' : ''}`;
}

/** [range as the 400 names it, addresses inside it (first, last, a middle one)]. */
const IPV4_REFUSED: [string, string[]][] = [
  ['"this network" (0.0.0.0/8)', ['0.0.0.0', '0.1.2.3', '0.255.255.255']],
  ['private (10.0.0.0/8)', ['10.0.0.0', '10.1.2.3', '10.255.255.255']],
  ['shared address space (carrier-grade NAT) (100.64.0.0/10)', ['100.64.0.0', '100.100.100.200', '100.127.255.255']],
  ['loopback (127.0.0.0/8)', ['127.0.0.1', '127.9.9.9', '127.255.255.255']],
  ['link-local (169.254.0.0/16)', ['169.254.169.254', '169.254.0.0', '169.254.255.255']],
  ['private (172.16.0.0/12)', ['172.16.0.0', '172.20.0.1', '172.31.255.255']],
  ['IETF protocol assignments (192.0.0.0/24)', ['192.0.0.0', '192.0.0.170', '192.0.0.255']],
  ['documentation (192.0.2.0/24)', ['192.0.2.1']],
  ['AS112 (192.31.196.0/24)', ['192.31.196.1']],
  ['AMT (192.52.193.0/24)', ['192.52.193.1']],
  ['deprecated 6to4 relay anycast (192.88.99.0/24)', ['192.88.99.1']],
  ['private (192.168.0.0/16)', ['192.168.0.0', '192.168.1.1', '192.168.255.255']],
  ['AS112 direct delegation (192.175.48.0/24)', ['192.175.48.1']],
  ['benchmarking (198.18.0.0/15)', ['198.18.0.0', '198.19.255.255']],
  ['documentation (198.51.100.0/24)', ['198.51.100.7']],
  ['documentation (203.0.113.0/24)', ['203.0.113.9']],
  ['multicast (224.0.0.0/4)', ['224.0.0.1', '239.255.255.250']],
  ['reserved (240.0.0.0/4)', ['240.0.0.1', '255.255.255.254']],
  ['broadcast (255.255.255.255/32)', ['255.255.255.255']],
];

const IPV6_REFUSED: [string, string[]][] = [
  ['unspecified (::/128)', ['::']],
  ['loopback (::1/128)', ['::1']],
  ['IPv4-mapped IPv6 (::ffff:0:0/96)', ['::ffff:a9fe:a9fe', '::ffff:808:808', '::ffff:7f00:1']],
  ['IPv4-compatible IPv6 (::/96)', ['::a9fe:a9fe', '::808:808', '::7f00:1']],
  ['IPv4-translated IPv6 (SIIT) (::ffff:0:0:0/96)', ['::ffff:0:a9fe:a9fe']],
  ['NAT64 (64:ff9b::/96)', ['64:ff9b::a9fe:a9fe', '64:ff9b::808:808']],
  ['local-use NAT64 (64:ff9b:1::/48)', ['64:ff9b:1::a9fe:a9fe', '64:ff9b:1:ffff::1']],
  ['discard-only (100::/64)', ['100::', '100::ffff:ffff:ffff:ffff']],
  ['Teredo (2001::/32)', ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001::1']],
  ['benchmarking (2001:2::/48)', ['2001:2::1', '2001:2:0:ffff::1']],
  ['ORCHID (2001:10::/28)', ['2001:10::1', '2001:1f::1']],
  ['ORCHIDv2 (2001:20::/28)', ['2001:20::1', '2001:2f::1']],
  ['documentation (2001:db8::/32)', ['2001:db8::1', '2001:db8:ffff::a9fe:a9fe']],
  ['IETF protocol assignments (2001::/23)', ['2001:3::1', '2001:1ff:ffff::1']],
  ['6to4 (2002::/16)', ['2002:a9fe:a9fe::1', '2002:808:808::1', '2002::']],
  ['documentation (3fff::/20)', ['3fff::1', '3fff:fff::1']],
  ['SRv6 SIDs (5f00::/16)', ['5f00::1']],
  ['unique local (fc00::/7)', ['fc00::1', 'fd00::1', 'fdff:ffff::1']],
  ['link-local (fe80::/10)', ['fe80::1', 'febf::1']],
  ['site-local (fec0::/10)', ['fec0::1', 'feff::1']],
  ['multicast (ff00::/8)', ['ff02::1', 'ff0e::101', 'ff05::1:3']],
  ['outside global unicast (2000::/3)', ['1::1', '4000::1', 'e000::1', '::ffff:1:0:0:1']],
];

/** Public addresses, several just outside a refused range. */
const PUBLIC_V4 = [
  '52.95.110.1',
  '8.8.8.8',
  '1.0.0.0',
  '9.255.255.255',
  '11.0.0.0',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '169.255.0.0',
  '172.15.255.255',
  '172.32.0.0',
  '192.0.1.1',
  '192.0.3.0',
  '192.167.255.255',
  '192.169.0.0',
  '198.17.255.255',
  '198.20.0.0',
  '223.255.255.255',
];
const PUBLIC_V6 = [
  '2a05:d018::1',
  '2600:1f18::1',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2001:200::1',
  '2003::1',
  '2001:db9::1',
  '3ffe::1',
  '3fff:1000::1',
  '2000::',
];

describe('addressProblem: the global unicast allow-list', () => {
  describe.each(IPV4_REFUSED)('refuses IPv4 %s', (range, addresses) => {
    it.each(addresses.flatMap(ipv4Spellings))('%s', (spelling) => {
      expect(addressProblem(spelling)).toContain(`is ${range}`);
    });
  });

  describe.each(IPV6_REFUSED)('refuses IPv6 %s', (range, addresses) => {
    it.each(addresses.flatMap(ipv6Spellings))('%s', (spelling) => {
      expect(addressProblem(spelling)).toContain(`is ${range}`);
    });
  });

  it.each([...PUBLIC_V4.flatMap(ipv4Spellings), ...PUBLIC_V6.flatMap(ipv6Spellings)])('allows %s', (address) => {
    expect(addressProblem(address)).toBeUndefined();
  });

  it.each([
    ['::a9fe:a9fe', '169.254.169.254 is link-local (169.254.0.0/16)'],
    ['::ffff:169.254.169.254', '169.254.169.254 is link-local (169.254.0.0/16)'],
    ['64:ff9b::10.0.0.1', '10.0.0.1 is private (10.0.0.0/8)'],
    ['2002:7f00:1::', '127.0.0.1 is loopback (127.0.0.0/8)'],
    ['2002:c0a8:101::1', '192.168.1.1 is private (192.168.0.0/16)'],
    // RFC 4380's example: the client 192.0.2.45, stored inverted in the last 32 bits.
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '192.0.2.45 is documentation (192.0.2.0/24)'],
    ['::808:808', 'carrying 8.8.8.8'],
  ])('names the IPv4 address %s carries: %s', (address, carried) => {
    expect(addressProblem(address)).toContain(carried);
  });

  it('refuses what is not an address', () => {
    expect(addressProblem('s3.amazonaws.com')).toMatch(/not an IP address/);
    expect(addressProblem('1.2.3.4.5')).toMatch(/not an IP address/);
  });
});

describe('endpointProblem: the API check of a literal endpoint, after URL parsing', () => {
  const none = new Set<string>();
  const host = (spelling: string) => (spelling.includes(':') ? `[${spelling}]` : spelling);

  describe.each([...IPV4_REFUSED, ...IPV6_REFUSED])('refuses %s', (range, addresses) => {
    const spellings = addresses.flatMap((a) => (a.includes(':') ? ipv6Spellings(a) : ipv4Spellings(a)));
    it.each(spellings)('https://%s/', (spelling) => {
      const problem = endpointProblem(`https://${host(spelling)}:443/base`, none);
      expect(problem).toMatch(/^The endpoint URL must point at a public \(global unicast\) address: /);
      expect(problem).toContain(`is ${range}`);
    });
  });

  it.each([...PUBLIC_V4.flatMap(ipv4Spellings), ...PUBLIC_V6])('allows https://%s/', (spelling) => {
    expect(endpointProblem(`https://${host(spelling)}/`, none)).toBeUndefined();
  });

  it.each(['localhost', 'LOCALHOST', 'localhost.', 'minio.localhost', 'a.b.localhost.'])(
    'refuses the name %s (it is this machine), while other names wait for DNS',
    (name) => {
      expect(endpointProblem(`https://${name}:9000/`, none)).toMatch(/not localhost/);
      expect(endpointProblem(`https://${name.replace(/localhost/i, 'example')}/`, none)).toBeUndefined();
    },
  );
});

describe('the connect-time filter (every request to a destination or STS)', () => {
  const servers: Server[] = [];
  let named = '';
  let other = '';
  const connections = new Map<string, number>();

  async function serve(): Promise<string> {
    const server = createServer((_req, res) => void res.writeHead(200).end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    server.on('connection', () => connections.set(url, (connections.get(url) ?? 0) + 1));
    servers.push(server);
    return url;
  }

  beforeAll(async () => {
    named = await serve();
    other = await serve();
  });
  afterAll(async () => {
    for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
  });

  const net = (origins: string[]) => ({ loopbackOrigins: new Set(origins), ...DESTINATION_TIMEOUTS });
  /** A PutObject through the exporter's S3 client (the SDK over the destination handler and its agents). */
  const send = async (url: string, origins: string[], body: Buffer = Buffer.from('x')) => {
    const d = {
      bucket_name: 'b',
      region: 'us-east-1',
      endpoint_url: url,
      aws_access_key_id: 'K',
      aws_secret_access_key: 'S',
    };
    await putObject(d, 'k', body, 'text/plain', net(origins));
    return { status: 200 };
  };
  /** The error a PutObject that must fail fails with. */
  const failure = (url: string, origins: string[], body?: Buffer): Promise<Error> =>
    send(url, origins, body).then(
      () => new Error(`reached ${url}`),
      (e: Error) => e,
    );
  const REFUSED = 'S3 PutObject failed: the endpoint resolves to an address exports may not reach (not public unicast)';

  it('reaches exactly the loopback origins the local runtime names', async () => {
    expect((await send(named, [named])).status).toBe(200);
    expect(connections.get(named)).toBe(1);
  });

  it('refuses a big upload and a multipart one too (the SDK makes its own agent for some requests unless given ours)', async () => {
    const error = await failure('https://[::a9fe:a9fe]/', [], Buffer.alloc(3 * 1024 * 1024));
    expect(error.message).toBe(REFUSED);
    const multipart = await failure('https://169.254.169.254/', [], Buffer.alloc(9 * 1024 * 1024));
    expect(multipart.message).toBe(REFUSED.replace('PutObject', 'CreateMultipartUpload'));
  });

  it('refuses every other loopback target before connecting: another port, address, name or scheme', async () => {
    const port = (url: string) => new URL(url).port;
    for (const url of [
      `https://127.0.0.1:${port(other)}`,
      `https://127.0.0.2:${port(named)}`,
      `https://localhost:${port(other)}`,
      `https://[::1]:${port(named)}`,
      `https://[::ffff:127.0.0.1]:${port(named)}`,
      `https://[::7f00:1]:${port(named)}`,
    ]) {
      const error = await failure(url, [named]);
      expect(error, url).toBeInstanceOf(DestinationError);
      expect(error.message, url).toBe(REFUSED);
    }
    // Plain http to a loopback origin that is not named never reaches the agent.
    expect((await failure(other, [named])).message).toBe('S3 PutObject failed: the endpoint is not https');
    expect(connections.get(other)).toBeUndefined();
  });

  it.each([
    'https://[::a9fe:a9fe]/',
    'https://[::ffff:a9fe:a9fe]/',
    'https://[64:ff9b::a9fe:a9fe]/',
    'https://[2002:a9fe:a9fe::]/',
    'https://169.254.169.254/',
    'https://0xa9fea9fe/',
    'https://198.18.0.1/',
    'https://192.0.0.170/',
    'https://240.0.0.1/',
    'https://255.255.255.255/',
    'https://224.0.0.1/',
    'https://[ff02::1]/',
  ])('refuses %s deployed and locally alike, without a connection attempt', async (url) => {
    for (const origins of [[], [named]]) {
      expect((await failure(url, origins)).message).toBe(REFUSED);
    }
  });
});
