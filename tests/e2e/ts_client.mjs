// The official TypeScript MCP SDK (@modelcontextprotocol/sdk, the copy pinned in
// tests/mcp-conformance) as an MCP client of the server, driven by test_oauth_sdks.py.
//
//   node ts_client.mjs metadata-document <mcp-url> <client-metadata-url> <redirect-url>
//     auth() with a clientMetadataUrl: prints "AUTHORIZE <url>", reads the URL the
//     person's browser was sent back to from stdin, trades the code, lists the tools.
//   node ts_client.mjs client-credentials <mcp-url> <client-id> <client-secret> <issuer>
//     ClientCredentialsProvider: gets a token, lists the tools, and calls `cancel`
//     (which an agent's token is never granted) and then `get_work` on one session.
//
// Prints one JSON line at the end: what the client holds and saw.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const sdk = process.env.MCP_SDK_DIR;
const load = (path) => import(pathToFileURL(join(sdk, "dist", "esm", path)).href);
const { auth } = await load("client/auth.js");
const { ClientCredentialsProvider } = await load("client/auth-extensions.js");
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const [mode, mcpUrl, ...rest] = process.argv.slice(2);

/** An interactive client named by its metadata document, keeping everything in memory. */
class MetadataDocumentClient {
  constructor(clientMetadataUrl, redirectUrl) {
    this.clientMetadataUrl = clientMetadataUrl;
    this.redirect = redirectUrl;
    this.saved = {};
  }
  get redirectUrl() { return this.redirect; }
  get clientMetadata() {
    return { client_name: "TS desk client", redirect_uris: [this.redirect], grant_types: ["authorization_code", "refresh_token"],
             response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  state() { return "ts-state"; }
  clientInformation() { return this.saved.client; }
  saveClientInformation(client) { this.saved.client = client; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens; }
  redirectToAuthorization(url) { this.authorizationUrl = url.toString(); }
  saveCodeVerifier(verifier) { this.saved.verifier = verifier; }
  codeVerifier() { return this.saved.verifier; }
}

async function listTools(provider, more = async () => ({})) {
  const client = new Client({ name: "agentprocess-e2e-ts", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
  const listed = await client.listTools();
  const seen = await more(client);
  await client.close();
  return { tools: listed.tools.map((tool) => tool.name), ...seen };
}

async function readLine() {
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  throw new Error("no callback URL on stdin");
}

if (mode === "metadata-document") {
  const [clientMetadataUrl, redirectUrl] = rest;
  const provider = new MetadataDocumentClient(clientMetadataUrl, redirectUrl);
  const first = await auth(provider, { serverUrl: mcpUrl });
  if (first !== "REDIRECT") throw new Error(`expected a redirect, got ${first}`);
  console.log(`AUTHORIZE ${provider.authorizationUrl}`);
  const back = new URL(await readLine());
  if (back.searchParams.get("state") !== "ts-state") throw new Error(`state: ${back}`);
  const second = await auth(provider, { serverUrl: mcpUrl, authorizationCode: back.searchParams.get("code") });
  const { tools } = await listTools(provider);
  console.log(JSON.stringify({ result: second, clientId: provider.saved.client.client_id, scope: provider.saved.tokens.scope,
                               refresh: Boolean(provider.saved.tokens.refresh_token), iss: back.searchParams.get("iss"), tools }));
} else if (mode === "client-credentials") {
  const [clientId, clientSecret, issuer] = rest;
  const provider = new ClientCredentialsProvider({ clientId, clientSecret, expectedIssuer: issuer });
  const seen = await listTools(provider, async (client) => {
    const cancel = await client.callTool({ name: "cancel", arguments: { requestId: "ts-c1", runId: "run_none", reason: "no" } });
    const work = await client.callTool({ name: "get_work", arguments: {} });
    return { cancel: { isError: Boolean(cancel.isError), error: cancel.structuredContent?.error },
             work: work.structuredContent?.ok === true };
  });
  const tokens = await provider.tokens();
  console.log(JSON.stringify({ ...seen, scope: tokens.scope, token: tokens.access_token.slice(0, 4) }));
} else {
  throw new Error(`unknown mode ${mode}`);
}
