"""A fictitious company, like the paper's Aurp: a profile, departments and roles, employees
with job titles and supervisors, clients with industries and locations, and projects with
location, dates, client, director and manager. Pure: a seed and a size in, rows out.

``size`` is the total number of rows across the tables (about 50 for a demo, a million
for a benchmark): 40% projects, 35% employees, 25% clients, and a few departments.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from ragaudit.world.names import NameSpace

INDUSTRIES = (
    "Hospitality",
    "Healthcare",
    "Logistics",
    "Energy",
    "Water",
    "Retail",
    "Education",
    "Transport",
    "Agriculture",
    "Telecoms",
)
DEPARTMENTS = (
    "Executive Office",
    "Structural Engineering",
    "Urban Planning",
    "Project Delivery",
    "Sustainability",
    "Finance",
    "People",
    "Digital Services",
)
ROLES = {
    "Executive Office": ("Chief Executive", "Director of Operations"),
    "Structural Engineering": ("Lead Engineer", "Structural Engineer", "Graduate Engineer"),
    "Urban Planning": ("Principal Planner", "Urban Planner"),
    "Project Delivery": ("Project Director", "Project Manager", "Site Coordinator"),
    "Sustainability": ("Head of Sustainability", "Energy Analyst"),
    "Finance": ("Finance Director", "Accountant"),
    "People": ("People Partner", "Recruiter"),
    "Digital Services": ("Head of Digital", "Data Engineer", "Software Developer"),
}


@dataclass
class Company:
    """Every table of the world as rows (tuples in column order), plus the profile."""

    profile: dict[str, str]
    department: list[tuple[str, str]] = field(default_factory=list)
    employee: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    client: list[tuple[str, str, str]] = field(default_factory=list)
    project: list[tuple[str, str, str, str | None, str, str, str]] = field(default_factory=list)

    @property
    def rows(self) -> int:
        """Rows across all tables."""
        return len(self.department) + len(self.employee) + len(self.client) + len(self.project)


SCHEMA = {
    "Department": ("Name TEXT PRIMARY KEY", "Head TEXT"),
    "Employee": (
        "Name TEXT PRIMARY KEY",
        "JobTitle TEXT",
        "Department TEXT REFERENCES Department(Name)",
        "Supervisor TEXT REFERENCES Employee(Name)",
    ),
    "Client": ("Name TEXT PRIMARY KEY", "Industry TEXT", "Location TEXT"),
    "Project": (
        "Name TEXT PRIMARY KEY",
        "Location TEXT",
        "StartDate DATE",
        "EndDate DATE",
        "Client TEXT REFERENCES Client(Name)",
        "ProjectDirector TEXT REFERENCES Employee(Name)",
        "ProjectManager TEXT REFERENCES Employee(Name)",
    ),
}


def make_company(size: int = 60, seed: int = 0) -> Company:
    """A deterministic company of about ``size`` rows."""
    if size < 20:
        raise ValueError("a world needs at least 20 rows")
    rng = random.Random(f"company:{seed}")
    names = NameSpace(seed)
    n_departments = len(DEPARTMENTS)
    rest = size - n_departments
    n_projects = max(4, rest * 40 // 100)
    n_clients = max(3, rest * 25 // 100)
    n_employees = max(len(DEPARTMENTS) + 2, rest - n_projects - n_clients)
    name = names.company(rng.randrange(1000))
    company = Company(
        profile={
            "name": name,
            "founded": str(rng.randint(1960, 2005)),
            "headquarters": names.place(rng.randrange(1000)),
            "services": "bespoke architecture, sustainable urban planning and structural "
            "health monitoring",
        }
    )
    people = names.distinct("person", n_employees)
    # The first person of each department heads it and reports to the chief executive;
    # everyone else reports to someone earlier in their own department, so the
    # supervision graph is a tree.
    by_department: dict[str, list[str]] = {d: [] for d in DEPARTMENTS}
    ceo = people[0]
    for i, person in enumerate(people):
        department = DEPARTMENTS[i % n_departments] if i >= n_departments else DEPARTMENTS[i]
        members = by_department[department]
        roles = ROLES[department]
        if i == 0:
            title, supervisor = "Chief Executive", None
        elif not members:
            title, supervisor = roles[0], ceo
        else:
            title = (
                roles[1 + (i // n_departments) % (len(roles) - 1)] if len(roles) > 1 else roles[0]
            )
            supervisor = members[rng.randrange(len(members)) // 2]
        members.append(person)
        company.employee.append((person, title, department, supervisor))
    company.department = [(d, by_department[d][0]) for d in DEPARTMENTS]
    directors = [e[0] for e in company.employee if e[1] in ("Project Director", "Lead Engineer")]
    managers = [e[0] for e in company.employee if e[1] in ("Project Manager", "Site Coordinator")]
    directors = directors or people[:2]
    managers = managers or people[1:3]
    towns = names.distinct("place", max(5, min(4000, n_clients // 2 + 5)))
    for client in names.distinct("company", n_clients):
        company.client.append((client, rng.choice(INDUSTRIES), rng.choice(towns)))
    epoch = dt.date(2018, 1, 1).toordinal()
    for project in names.distinct("project", n_projects):
        start = dt.date.fromordinal(epoch + rng.randrange(8 * 365))
        # About one project in six is still running: no end date yet.
        end = None if rng.random() < 0.17 else start + dt.timedelta(days=rng.randint(120, 1100))
        company.project.append(
            (
                project,
                rng.choice(towns),
                start.isoformat(),
                None if end is None else end.isoformat(),
                rng.choice(company.client)[0],
                rng.choice(directors),
                rng.choice(managers),
            )
        )
    return company
