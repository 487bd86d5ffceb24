/** The stream endpoints' HTTP schemas: core's schema objects plus the paths. */
import { t } from 'elysia'
import { StreamTransitionSchema } from '@earn/core/streams/schema'

export {
  ConfirmStreamBody,
  CreateStreamBody,
  CreateStreamResult,
  StreamList,
  StreamListQuery,
  StreamResult,
} from '@earn/core/streams/schema'

export const StreamParams = t.Object({ streamId: t.String({ description: 'Stream UUID' }) })
export const TransitionParams = t.Object({ streamId: t.String({ description: 'Stream UUID' }), action: StreamTransitionSchema })
