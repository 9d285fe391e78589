import type { Kysely, Transaction } from 'kysely';

/** Table types. Timestamps travel as ISO 8601 strings on both dialects; JSON columns as text. */
export interface AccountsTable {
  id: string;
  name: string;
  plan: string;
  created_at: string;
}

export interface UsersTable {
  account_id: string;
  id: string;
  email: string;
  email_lower: string;
  role: string;
  status: string;
  created_at: string;
  updated_at: string;
}

export interface ApiKeysTable {
  account_id: string;
  id: string;
  user_id: string;
  name: string | null;
  key_hash: string;
  key_prefix: string;
  scopes: string;
  created_at: string;
  revoked_at: string | null;
}

export interface DataObjectsTable {
  account_id: string;
  id: string;
  title: string;
  title_sort: string;
  type: string;
  content: string;
  tags: string;
  metadata: string;
  created_at: string;
  updated_at: string | null;
}

export interface EventsTable {
  account_id: string;
  id: string;
  name: string;
  payload: string;
  created_at: string;
}

export interface InvitationsTable {
  account_id: string;
  id: string;
  user_id: string;
  token_hash: string;
  expires_at: string;
  used_at: string | null;
  created_at: string;
}

/** Outgoing mail, durable until sent; bodies are sealed (they hold one-time tokens) and wiped once sent. */
export interface MailOutboxTable {
  account_id: string;
  id: string;
  to_address: string;
  sealed_message: string | null;
  status: string;
  attempts: number;
  next_attempt_at: string;
  locked_until: string | null;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
}

export interface DB {
  accounts: AccountsTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  data_objects: DataObjectsTable;
  events: EventsTable;
  invitations: InvitationsTable;
  mail_outbox: MailOutboxTable;
}

export type Dialect = 'sqlite' | 'postgres';

/** What repositories take first: the database or an open transaction. */
export type Db = Kysely<DB> | Transaction<DB>;
