#!/usr/bin/env bash
# An agent and a person take one incident-postmortem run to its finish over MCP,
# with nothing but curl and python3. Start the dev server first:
#
#   cargo run --release -- dev --details dev.json
#
# then run this script from the repository root (or pass the details file):
#
#   examples/walkthrough.sh [dev.json]
set -euo pipefail

details="${1:-dev.json}"
field() { python3 -c "import json,sys; d=json.load(open('$details')); print($1)"; }
URL=$(field 'd["url"]')
AGENT=$(field 'd["identities"]["agent-1"]["token"]')
ALICE=$(field 'd["identities"]["alice"]["token"]')

# call TOKEN TOOL ARGUMENTS-JSON: one MCP tools/call; prints the { ok, data } result.
call() {
  curl -sS "$URL" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-11-25' -H "Authorization: Bearer $1" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3}}" |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["result"]["structuredContent"]))'
}
# pick JSON EXPRESSION: reads a result on stdin, prints one value of it (r is the result).
pick() { python3 -c "import json,sys; r=json.load(sys.stdin); assert r['ok'], r; print($1)"; }
new_id() { python3 -c 'import uuid; print(uuid.uuid4())'; }

echo "1. Alice starts a run of incident-postmortem."
run=$(call "$ALICE" start_run "{\"process\":\"incident-postmortem\",\"requestId\":\"$(new_id)\",
  \"inputs\":{\"incidentId\":\"INC-7\",\"incidentOwner\":\"alice@example.com\"}}" | pick 'r["data"]["run"]["id"]')
echo "   run $run"

echo "2. The agent finds the draft step in get_work, claims it and submits the report."
step=$(call "$AGENT" get_work '{"process":"incident-postmortem"}' |
  pick "[i for i in r['data']['items'] if i['runId']=='$run'][0]['stepId']")
token=$(call "$AGENT" claim "{\"runId\":\"$run\",\"stepId\":\"$step\",\"requestId\":\"$(new_id)\"}" | pick 'r["data"]["token"]')
call "$AGENT" submit "{\"token\":\"$token\",\"requestId\":\"$(new_id)\",
  \"output\":{\"report\":\"Timeline, impact and causes.\",\"proposedActions\":[{\"action\":\"Alert on queue depth\"}]},
  \"evidence\":[{\"kind\":\"link\",\"ref\":\"https://wiki.example.com/INC-7\"}],
  \"summary\":\"Drafted the postmortem from the incident record.\"}" | pick '"   draft: " + r["data"]["steps"][0]["state"]'

echo "3. Alice sees the review in her work items and approves it with the exact decide call."
decide=$(call "$ALICE" get_work '{}' |
  pick "json.dumps([i for i in r['data']['items'] if i['runId']=='$run'][0]['workItem']['decide']['arguments'])")
call "$ALICE" decide "$(python3 -c "import json,uuid; a=json.loads('$decide'); a.update(decision='approved', requestId=str(uuid.uuid4())); print(json.dumps(a))")" |
  pick '"   review: " + r["data"]["steps"][1]["state"]'

echo "4. The agent registers the actions."
token=$(call "$AGENT" claim "{\"runId\":\"$run\",\"stepId\":\"register_actions\",\"requestId\":\"$(new_id)\"}" | pick 'r["data"]["token"]')
call "$AGENT" submit "{\"token\":\"$token\",\"requestId\":\"$(new_id)\",
  \"output\":{\"actionIds\":[\"OPS-12\"],\"trackerView\":\"https://tracker.example.com/v/INC-7\"},
  \"evidence\":[{\"kind\":\"link\",\"ref\":\"https://tracker.example.com/v/INC-7\"}],
  \"summary\":\"Created OPS-12 for the one approved action.\"}" | pick '"   register_actions: " + r["data"]["steps"][2]["state"]'

echo "5. Alice completes the closure task; the run finishes."
item=$(call "$ALICE" get_work '{}' | pick "json.dumps([i for i in r['data']['items'] if i['runId']=='$run'][0]['workItem']['decide']['arguments'])")
call "$ALICE" decide "$(python3 -c "import json,uuid; a=json.loads('$item'); a.update(decision='completed', requestId=str(uuid.uuid4()), summary='All actions closed.', output={'closures':[{'actionId':'OPS-12','evidence':'https://tracker.example.com/OPS-12'}],'closureSummary':'Alert shipped and verified.'}, evidence=[{'kind':'link','ref':'https://tracker.example.com/OPS-12'}]); print(json.dumps(a))")" >/dev/null
call "$ALICE" get_run "{\"runId\":\"$run\"}" | pick '"   run " + r["data"]["run"]["state"] + ", outcome " + str(r["data"]["run"]["outcome"])'
