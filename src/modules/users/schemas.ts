import { Type } from 'typebox';
import { CollectionEnvelope, Envelope, IdParam, PageQuery, Timestamp } from '../../http/schemas.ts';
import { ROLES, SCOPES } from '../api-keys/scopes.ts';

const Role = Type.Enum([...ROLES], { description: 'member: read and write data; admin: everything.' });

export const User = Type.Object(
  {
    id: Type.String({ examples: ['usr_01JD4Z5T8N3QK9W2V7R6M1B0XC'] }),
    email: Type.String({ format: 'email' }),
    role: Role,
    status: Type.Enum(['invited', 'active']),
    created_at: Type.String({
      ...Timestamp,
      description: 'When the user joined; for a user still invited, when the invitation was made.',
    }),
  },
  { $id: 'User' },
);

export const InviteBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254 }),
    role: Role,
  },
  { additionalProperties: false },
);

export const RoleBody = Type.Object({ role: Role }, { additionalProperties: false });

export const AcceptBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);

export const AcceptedEnvelope = Envelope(
  Type.Object({
    user: User,
    api_key: Type.Object({
      id: Type.String(),
      key: Type.String({ description: 'Shown once; only its hash is stored.' }),
      scopes: Type.Array(Type.Enum([...SCOPES])),
    }),
  }),
);

export const ListUsersQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
export const UserIdParams = IdParam('usr_');
export const UserEnvelope = Envelope(User);
export const UserListEnvelope = CollectionEnvelope('users', User);
