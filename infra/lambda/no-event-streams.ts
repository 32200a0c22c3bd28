/**
 * Bundled in place of `@smithy/core/event-streams` (see infra/build.ts). The SDK's HTTP protocols load it
 * (a dynamic import, so esbuild inlines it into every bundle: ~15 KB minified) only for operations whose
 * input or output is an event stream; none of the calls our functions make (DynamoDB, SQS, KMS) has one.
 * Should one ever reach it, the call fails loudly instead of misbehaving.
 */
const unavailable = (): never => {
  throw new Error('event streams are not bundled into this function (infra/lambda/no-event-streams.ts)');
};

export class EventStreamSerde {
  constructor() {
    unavailable();
  }
}

export const eventStreamSerdeProvider = unavailable;
