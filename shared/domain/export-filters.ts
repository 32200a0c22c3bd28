/**
 * A batch export's property filters, checked with the trend engine's grammar (the runner applies them with
 * it): passed to createExport and updateExport by the functions whose requests may set them (batch-exports.ts).
 */
import { parseProperties } from '../trends/properties.ts';
import type { FilterCheck } from './batch-exports.ts';

export const checkExportFilters: FilterCheck = (filters) => {
  parseProperties(filters, 'filters');
};
