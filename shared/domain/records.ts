/** Records as stored (minus table keys). Responses are shaped from these in the domain modules. */
export interface ProjectRecord {
  id: number;
  uuid: string;
  organization_id: string;
  name: string;
  api_token: string;
  timezone: string;
  week_start_day: 0 | 1;
  test_account_filters: unknown[];
  /** Turns posthog-js autocapture off through remote config; absent on projects made before it existed (false). */
  autocapture_opt_out?: boolean;
  created_at: string;
}
