/**
 * A connection refused for a reason that time will not fix (an untrusted certificate, a wrong
 * password, a mechanism the broker does not enable): not retried. `setting` names the
 * environment variable to look at; the message never holds a password or key.
 */
export class KafkaSecurityError extends Error {
  readonly setting: string;

  constructor(setting: string, message: string) {
    super(message);
    this.name = "KafkaSecurityError";
    this.setting = setting;
  }
}
