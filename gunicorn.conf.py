"""gunicorn settings, read from the working directory (`gunicorn wsgi:app`).

Access log lines name the path, never the query string or the Referer: authorization and
end-session requests (`id_token_hint`) and apps' own callback URLs (`code`) carry secrets there.
"""

access_log_format = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms "%(a)s"'
