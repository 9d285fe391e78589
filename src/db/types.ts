import type { Generated, Kysely, Transaction } from 'kysely';

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

/** Striped exact object counts per account (migration 0006, kept by triggers): the total is the sum. */
export interface DataObjectCountsTable {
  account_id: string;
  stripe: number;
  n: number;
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

export interface WebhooksTable {
  account_id: string;
  id: string;
  url: string;
  /** JSON array of event names, or `["*"]`. */
  events: string;
  /** The signing secret sealed with the secret box; null when the webhook signs nothing. */
  sealed_secret: string | null;
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveriesTable {
  account_id: string;
  id: string;
  webhook_id: string;
  event_id: string;
  event_name: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempt_count: Generated<number>;
  /** Automatic retries already spent from the schedule. */
  retries_used: Generated<number>;
  /** 1 while a manual retry is queued: its failure ends the delivery without touching the schedule. */
  manual: Generated<number>;
  next_attempt_at: string | null;
  /** Lease of the worker that claimed the delivery; a crashed worker's claim expires with it. */
  locked_until: string | null;
  claim_token: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttemptsTable {
  account_id: string;
  delivery_id: string;
  attempt: number;
  at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

/** One indexed data object (migration 0002): copies of the fields search filters and sorts on. */
export interface SearchDocumentsTable {
  account_id: string;
  id: string;
  type: string;
  title_sort: string;
  created_at: string;
  tags: string;
  metadata: string;
}

/** An account's distinct indexed words and how many of its objects hold each (wildcard expansion). */
export interface SearchVocabTable {
  account_id: string;
  word: string;
  docs: number;
}

export interface DB {
  accounts: AccountsTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  data_objects: DataObjectsTable;
  data_object_counts: DataObjectCountsTable;
  search_documents: SearchDocumentsTable;
  search_vocab: SearchVocabTable;
  events: EventsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  invitations: InvitationsTable;
  mail_outbox: MailOutboxTable;
}

export type Dialect = 'sqlite' | 'postgres';

/** What repositories take first: the database or an open transaction. */
export type Db = Kysely<DB> | Transaction<DB>;
