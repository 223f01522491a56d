import { DEV_SECRETS, defineConfig, receiverDevDefaults, serviceShape, vars } from "@th/config";

/** This service's name on the internal API and the callers it accepts (decision 0320). */
export const INTERNAL_RECEIVER = { service: "pipeline", callers: ["gateway"] } as const;

export const configSchema = defineConfig(
  {
    ...serviceShape({ port: 8086, internalPort: 9086, ...INTERNAL_RECEIVER }),
    /** Most items one tenant's pipeline holds; an add beyond it answers 409. */
    MAX_ITEMS_PER_TENANT: vars.positiveInt(100_000),
    /** Most notes one item keeps; a note beyond it answers 409. */
    MAX_NOTES_PER_ITEM: vars.positiveInt(500),
  },
  { devDefaults: { ...DEV_SECRETS, ...receiverDevDefaults(INTERNAL_RECEIVER) } },
);

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export const readConfig = configSchema.load;
