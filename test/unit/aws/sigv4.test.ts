import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { signedHeaders, type SignRequest } from '#shared/aws/sigv4.ts';
import { Sha256 } from '../../support/sigv4.ts';

// AWS's published SigV4 test suite (aws-sig-v4-test-suite) and the IAM guide's worked example.
const EXAMPLE = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const AT = new Date('2015-08-30T12:36:00Z');

const signatureOf = (r: Omit<SignRequest, 'credentials' | 'now' | 'region'> & { region?: string }) =>
  signedHeaders({ region: 'us-east-1', credentials: EXAMPLE, now: AT, ...r }).authorization;

describe('SigV4 (shared/aws/sigv4.ts)', () => {
  it('signs the test suite requests get-vanilla, post-vanilla and get-vanilla-query-order-key-case as AWS does', () => {
    const url = new URL('https://example.amazonaws.com/');
    expect(signatureOf({ method: 'GET', url, headers: {}, service: 'service' })).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
    expect(signatureOf({ method: 'POST', url, headers: {}, service: 'service' })).toContain(
      'Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b',
    );
    expect(
      signatureOf({
        method: 'GET',
        url: new URL('https://example.amazonaws.com/?Param2=value2&Param1=value1'),
        headers: {},
        service: 'service',
      }),
    ).toContain('Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500');
  });

  it("signs the IAM guide's ListUsers example", () => {
    expect(
      signatureOf({
        method: 'GET',
        url: new URL('https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08'),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
        service: 'iam',
      }),
    ).toContain(
      'SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7',
    );
  });

  it('agrees with @smithy/signature-v4 on paths, queries, headers, bodies, session tokens and S3 signing', async () => {
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    const pick = <T>(xs: readonly T[]) => xs[next() % xs.length]!;
    const segments = ['a', 'b c', 'ü', "it's", '*', '.', '..', '%41', 'x+y', '~_-'];
    const words = ['', 'v', 'a b', 'é', '!*()', 'x=y&z', '/'];
    let compared = 0;
    for (let i = 0; i < 200; i += 1) {
      const s3 = i % 4 === 0;
      const raw = Array.from({ length: next() % 4 }, () => pick(segments));
      const path = s3 ? `/${raw.map(encodeURIComponent).join('/')}` : `/${raw.join('/')}${next() % 3 === 0 ? '/' : ''}`;
      const query = Object.fromEntries(
        Array.from({ length: next() % 3 }, (_, k) => [`${pick(words)}${k}`, pick(words)]),
      );
      const headers = { 'x-amz-target': `T.${pick(words)}`, 'content-type': ` a   b ${pick(words)} ` };
      const body = pick(['', '{}', '{"a":"é"}']);
      const credentials = { ...EXAMPLE, ...(i % 3 === 0 ? { sessionToken: 'token/+=' } : {}) };
      const url = new URL('https://host.example.com:8443');
      const ours = signedHeaders({
        method: 'POST',
        url,
        path,
        query,
        headers,
        body,
        service: 's',
        region: 'eu-west-1',
        credentials,
        s3,
        now: AT,
      });
      const theirs = await new SignatureV4({
        service: 's',
        region: 'eu-west-1',
        credentials,
        sha256: Sha256,
        uriEscapePath: !s3,
        applyChecksum: s3,
      }).sign(
        {
          method: 'POST',
          protocol: 'https:',
          hostname: url.hostname,
          port: 8443,
          path,
          query,
          headers: { host: url.host, ...headers },
          body,
        },
        { signingDate: AT },
      );
      expect(ours.authorization, `${path} ${JSON.stringify(query)}`).toBe(theirs.headers.authorization);
      compared += 1;
    }
    expect(compared).toBe(200);
  });
});
