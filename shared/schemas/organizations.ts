import * as v from 'valibot';

/** The four writable organization fields (spec §2.2); any other field in a body is ignored. */
export const organizationFields = {
  name: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(64)),
  logo_media_id: v.optional(v.nullable(v.pipe(v.string(), v.uuid()))),
  is_member_join_email_enabled: v.optional(v.boolean()),
  enforce_2fa: v.optional(v.boolean()),
};

export const createOrganizationBody = v.object(organizationFields);
export const updateOrganizationBody = v.object({ ...organizationFields, name: v.optional(organizationFields.name) });
