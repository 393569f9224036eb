/** The audit trail's vocabulary (contract 14): what an entry's action and actor type can be. */

/** Every action the audit trail records (contract 14), `<resource>.<verb>`. */
export const AUDIT_ACTIONS = [
  'platform_customer.create',
  'platform_customer.verify',
  'authority_credentials.store',
  'authority_credentials.invalidate',
  'irm.refresh',
  'genebrc_request.push',
  'genebrc_request.settle',
  'bulk_upload.create',
  'webhook_endpoint.create',
  'webhook_endpoint.update',
  'webhook_endpoint.delete',
  'webhook_endpoint.rotate_secret',
  'webhook_endpoint.test',
  'event.redeliver',
  'reconciliation.request',
  'platform.create',
  'platform.update',
  'api_key.issue',
  'api_key.revoke',
  'console_user.create',
  'console_user.update',
  'console_user.disable',
  'console_user.enable',
  'console_user.invite',
  'console_user.sign_in',
  'console_user.sign_out',
  'console_user.password_reset',
  'console_user.two_factor_enrol',
  'console_user.two_factor_reset',
  'encryption_key.rotate',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const ACTOR_TYPES = ['api_key', 'console_user', 'admin', 'cli', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];
