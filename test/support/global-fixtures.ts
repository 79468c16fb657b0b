// Mocha root hooks shared by every test file. Shared resources (the Kafka broker) start lazily on first use
// and stop here, once per run.
type Hook = () => Promise<void> | void;
const afterAllHooks: Hook[] = [];

export function onRunEnd(hook: Hook): void {
  afterAllHooks.push(hook);
}

export const mochaHooks = {
  async afterAll(): Promise<void> {
    for (const h of afterAllHooks.splice(0).reverse()) await h();
  },
};
