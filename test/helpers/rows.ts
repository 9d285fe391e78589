import type { DataObjectsTable } from '../../src/db/types.ts';
import { newId } from '../../src/lib/ids.ts';
import { titleSortKey } from '../../src/lib/sort-key.ts';

/**
 * A `data_objects` row as the data service stores it: an empty note of the account, created now,
 * with `fields` over it (a title also sets title_sort, through the service's titleSortKey).
 */
export function dataRow(accountId: string, fields: Partial<DataObjectsTable> = {}): DataObjectsTable {
  const title = fields.title ?? 'Note';
  return {
    account_id: accountId,
    id: newId('data'),
    title,
    title_sort: titleSortKey(title),
    type: 'note',
    content: '',
    tags: '[]',
    metadata: '{}',
    created_at: new Date().toISOString(),
    updated_at: null,
    ...fields,
  };
}
