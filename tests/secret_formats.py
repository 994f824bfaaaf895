"""49 formats of secrets as they turn up in notes and chat, each secret marked ⟦like this⟧.

Shared by ``test_secretscan.py`` and ``bench/bench_secretscan.py``. Every value is made up; none
was ever a working credential. :func:`unmark` gives the text and where each secret stands.
"""

from __future__ import annotations

import re

FORMATS: dict[str, str] = {
    "AWS access key id": "the deploy user's key is ⟦AKIA2E0A8F3B244C9986⟧",
    "AWS secret, quoted": 'aws_secret_access_key = "⟦wJalrXUtnFEMI/K7MDENG/bPxRfiCYzX8qLm4T2d⟧"',
    "AWS secret, unquoted": "aws_secret_access_key = ⟦wJalrXUtnFEMI/K7MDENG/bPxRfiCYzX8qLm4T2d⟧",
    "AWS secret, export": "export AWS_SECRET_ACCESS_KEY=⟦wJalrXUtnFEMI/K7MDENG/bPxRfiCYzX8qLm4T2d⟧",
    "AWS key in a code fence": "```ini\n[default]\naws_access_key_id = ⟦AKIA2E0A8F3B244C9986⟧\n"
                               "aws_secret_access_key = ⟦wJalrXUtnFEMI/K7MDENG/bPxRfiCYzX8qLm4T2d⟧\n```",
    "GitHub classic token": "CI pushes with ⟦ghp_1234567890abcdefghijklmnopqrstuvwxyzAB⟧",
    "GitHub OAuth token": "⟦gho_16C7e42F292c6912E7710c838347Ae178B4a⟧",
    "GitHub app token": "the action uses ⟦ghs_16C7e42F292c6912E7710c838347Ae178B4a⟧",
    "GitHub fine-grained token": "⟦github_pat_11ABCDEFG0123456789abc_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                                 "VWXYZ0123456789abcdefg⟧",
    "GitLab token": "the runner uses ⟦glpat-xY7zq9R2mK4vL8nP3sT6⟧",
    "Slack bot token": "bot token ⟦xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx⟧",
    "Slack user token": "⟦xoxp-123456789012-123456789012-123456789012-0123456789abcdef0123456789abcdef⟧",
    "Slack webhook": "alerts go to ⟦https://hooks.slack.com/services/T0123ABCD/B0123ABCD/abcdefghijklmnopqrstuvwx⟧",
    "Stripe secret key": "⟦sk_live_51HxYzAbCdEfGhIjKlMnOpQr⟧",
    "Stripe restricted key": "⟦rk_live_51HxYzAbCdEfGhIjKlMnOpQr⟧",
    "OpenAI project key": "use ⟦sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH⟧ for the evals",
    "OpenAI legacy key": "OPENAI=⟦sk-Ab3dEf6hIj9lMn2pQr5tUv8xYz1BcD4fGh7jKl0nOp3rSt6v⟧",
    "Anthropic key": "⟦sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH⟧",
    "Google API key": "maps key ⟦AIzaSyA1234567890abcdefghijklmnopqrstuv⟧",
    "Google OAuth client secret": "client secret ⟦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⟧",
    "JWT": "⟦eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
           ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U⟧",
    "RSA private key": "⟦-----BEGIN RSA PRIVATE KEY-----⟧\n"
                       "⟦MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgwMbRvI0MBZhpF⟧\n"
                       "⟦-----END RSA PRIVATE KEY-----⟧",
    "OpenSSH private key": "⟦-----BEGIN OPENSSH PRIVATE KEY-----⟧",
    "PGP private key": "⟦-----BEGIN PGP PRIVATE KEY BLOCK-----⟧",
    "Postgres URL": "reports read postgres://admin:⟦s3cretpass⟧@db.internal:5432/app",
    "MongoDB URL": "mongodb+srv://app:⟦Zq8pLm2xR4⟧@cluster0.mongodb.net/prod",
    "HTTPS basic auth": "clone from https://deploy:⟦T0pS3cretV4lue⟧@git.internal.example/repo.git",
    "password keyword, quoted": "password = '⟦hunter2xyz⟧'",
    "password keyword, YAML": "password: ⟦x8#kLq9z⟧",
    "password in words": "the staging password is ⟦hunter2!⟧",
    "password in a sentence": "My password for the company system is ⟦SuperSecret123!⟧",
    "password in Chinese": "部署密码是 ⟦Passw0rd!2024⟧",
    "API_KEY line": "API_KEY=⟦4f9c2b7e1d8a6f3c5b0e9d7a2c4f6b8e⟧",
    "npm token": "publish with ⟦npm_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ⟧",
    "Hugging Face token": "HF token ⟦hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH⟧",
    "DigitalOcean token": "doctl auth init -t ⟦dop_v1_4f9c2b7e1d8a6f3c5b0e9d7a2c4f6b8e"
                          "4f9c2b7e1d8a6f3c5b0e9d7a2c4f6b8e⟧",
    "netrc line": "machine api.internal.example login deploy password ⟦Zq8pLm2xR4⟧",
    "SendGrid key": "⟦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⟧",
    "Twilio API key": "twilio key ⟦SK0123456789abcdef0123456789abcdef⟧",
    "Mailchimp key": "mailchimp ⟦0123456789abcdef0123456789abcdef-us14⟧",
    "PyPI token": "⟦pypi-AgEIcHlwaS5vcmcCJDAxMjM0NTY3LTg5YWItY2RlZi0wMTIzLTQ1Njc4OWFiY2RlZgACJXsicGVybWlzc2lvbnMiOiAi"
                  "dXNlciIsICJ2ZXJzaW9uIjogMX0AAAYg⟧",
    "Discord bot token": "⟦MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs⟧",
    "Telegram bot token": "bot ⟦110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawq⟧",
    "Azure storage key": "DefaultEndpointsProtocol=https;AccountName=acme;⟦AccountKey=lJzRc1YdHaAA2KCNJJ1tkYwF/+mK"
                         "K6Ygw0NGe170Xu592euJv2wYUtBlV8z+qnlcNQSnIYVTkLWntUO1F8j8rQ==⟧",
    "Square token": "square ⟦sq0atp-1A2b3C4d5E6f7G8h9I0jKl⟧",
    "Shopify token": "shopify ⟦shpat_0123456789abcdef0123456789abcdef⟧",
    "Authorization header": "curl -H 'Authorization: Bearer ⟦8f3kZq2LmX9vR4tW7yB1nC6dE0pH5sJ⟧' https://api.internal.example",
    "Django secret key": "SECRET_KEY = '⟦django-insecure-k9#m2$x!q8@z7&w3^v5%t1*r4(y6)u0⟧'",
    "docker login password": "docker login -u deploy -p ⟦Zq8pLm2xR4vN⟧ registry.internal.example",
}

# The kind the scanner names for each secret of each format, in the order they stand.
KINDS: dict[str, tuple[str, ...]] = {
    "AWS access key id": ("AWS Access Key",),
    "AWS secret, quoted": ("AWS Access Key",),
    "AWS secret, unquoted": ("secret key or token",),
    "AWS secret, export": ("secret key or token",),
    "AWS key in a code fence": ("AWS Access Key", "secret key or token"),
    "GitHub classic token": ("GitHub Token",),
    "GitHub OAuth token": ("GitHub Token",),
    "GitHub app token": ("GitHub Token",),
    "GitHub fine-grained token": ("GitHub Token",),
    "GitLab token": ("GitLab Token",),
    "Slack bot token": ("Slack token",),
    "Slack user token": ("Slack token",),
    "Slack webhook": ("Slack Token",),
    "Stripe secret key": ("Stripe Access Key",),
    "Stripe restricted key": ("Stripe Access Key",),
    "OpenAI project key": ("OpenAI key",),
    "OpenAI legacy key": ("OpenAI key",),
    "Anthropic key": ("Anthropic key",),
    "Google API key": ("Google API key",),
    "Google OAuth client secret": ("Google OAuth client secret",),
    "JWT": ("JSON Web Token",),
    "RSA private key": ("private key", "private key", "private key"),
    "OpenSSH private key": ("private key",),
    "PGP private key": ("private key",),
    "Postgres URL": ("Basic Auth Credentials",),
    "MongoDB URL": ("Basic Auth Credentials",),
    "HTTPS basic auth": ("Basic Auth Credentials",),
    "password keyword, quoted": ("Secret Keyword",),
    "password keyword, YAML": ("password",),
    "password in words": ("password",),
    "password in a sentence": ("password",),
    "password in Chinese": ("password",),
    "API_KEY line": ("secret key or token",),
    "npm token": ("npm token",),
    "Hugging Face token": ("Hugging Face token",),
    "DigitalOcean token": ("DigitalOcean token",),
    "netrc line": ("netrc password",),
    "SendGrid key": ("SendGrid API Key",),
    "Twilio API key": ("Twilio API Key",),
    "Mailchimp key": ("Mailchimp Access Key",),
    "PyPI token": ("PyPI Token",),
    "Discord bot token": ("Discord Bot Token",),
    "Telegram bot token": ("Telegram Bot Token",),
    "Azure storage key": ("Azure Storage Account access key",),
    "Square token": ("Square token",),
    "Shopify token": ("Shopify token",),
    "Authorization header": ("authorization header",),
    "Django secret key": ("Secret Keyword",),
    "docker login password": ("password",),
}

MARK = re.compile(r"⟦(.*?)⟧")


def unmark(marked: str) -> tuple[str, list[str]]:
    """The text without its marks, and the secrets it holds."""
    return MARK.sub(lambda m: m.group(1), marked), MARK.findall(marked)
