// Runs one step of examples/clients/openid_client.mjs for the Python interop test:
//   node node_driver.mjs start|finish|refresh   (a JSON request on stdin, a JSON answer on stdout)
// A library error is printed as {"error": ..., "message": ..., "code": ...} with exit status 2.
import { discover, startSignIn, finishSignIn, refresh } from '../../examples/clients/openid_client.mjs'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const req = JSON.parse(Buffer.concat(chunks).toString() || '{}')

try {
  const config = await discover(req.issuer, req.clientId, req.clientSecret, { allowHttp: true })
  let answer
  switch (process.argv[2]) {
    case 'start':
      answer = await startSignIn(config, req.redirectUri, req.scope)
      break
    case 'finish':
      answer = await finishSignIn(config, req.callbackUrl, req.pending)
      break
    case 'refresh':
      answer = await refresh(config, req.refreshToken)
      break
    default:
      throw new Error(`unknown step ${process.argv[2]}`)
  }
  process.stdout.write(JSON.stringify(answer))
} catch (err) {
  process.stdout.write(JSON.stringify({
    error: err.error ?? err.name, message: [err.message, err.cause?.message].filter(Boolean).join(': '),
    code: err.code ?? null, status: err.status ?? null,
  }))
  process.exit(2)
}
