import { established, type Established, type HandlerContext, type Middleware } from './pipeline.ts';

/** The last middleware: what the pipeline established, checked complete, onto the handler's context. */
export const handoff: Middleware = {
  before: (request) => {
    const pipeline: Established = {
      caller: established(request, 'caller', 'authentication'),
      tenant: established(request, 'tenant', 'tenancy'),
      input: established(request, 'input', 'validation'),
    };
    Object.assign(request.context, { pipeline });
  },
};

/** The handler's side of the handoff. */
export function handedOff(context: HandlerContext): Established {
  if (!context.pipeline) throw new Error('pipeline order: the handoff middleware must run before the handler');
  return context.pipeline;
}
