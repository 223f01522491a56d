export { main as topicsCli } from "./cli.ts";
