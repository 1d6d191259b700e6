"""Notification: what is new and needs a person, sent once to where people
already look (a Prometheus Alertmanager, e-mail, a chat webhook): the items
and how they are found (:mod:`.items`), the site's configuration and its
secrets (:mod:`.config`), the ledger of what was sent on each channel
(:mod:`.ledger`), the text of a message (:mod:`.message`), the channels
(:mod:`.channels`) and one run of all that (:mod:`.send`); what is shown
of a secret is :mod:`clusterproof.redact`'s rule. docs/notify.md.
"""
